function __senpiGuardConfig() {
    return /*senpi-guard:config*/{"tags":[],"marker":""}/*senpi-guard:config-end*/;
}
function __senpiGuardMarker(tag) {
    return __senpiGuardConfig().marker.split("{tag}").join(tag);
}
var __senpiGuardTagCache;
function __senpiGuardTagSet(tags) {
    if (__senpiGuardTagCache === undefined) {
        __senpiGuardTagCache = { names: new Set(tags), longest: Math.max(...tags.map((t) => t.length)) };
    }
    return __senpiGuardTagCache;
}
// Well-formed spans of one text block, in order. A tag whose spans are unclosed, nested or stray
// in this block is left alone here (fail closed); a span inside another tag's span is not ours.
// Tokens are found by jumping from "<" to "<" and reading at most the longest tag name: linear.
function __senpiGuardSpans(text, tags) {
    let at = text.indexOf("<");
    if (at === -1) {
        return [];
    }
    const { names, longest } = __senpiGuardTagSet(tags);
    const open = new Map();
    const broken = new Set();
    let found = [];
    for (; at !== -1; at = text.indexOf("<", at + 1)) {
        const closing = text.charCodeAt(at + 1) === 47;
        const nameStart = closing ? at + 2 : at + 1;
        const limit = Math.min(text.length, nameStart + longest + 1);
        let gt = nameStart;
        while (gt < limit && text.charCodeAt(gt) !== 62) {
            gt++;
        }
        if (gt === limit || gt === nameStart) {
            continue;
        }
        const tag = text.slice(nameStart, gt);
        if (!names.has(tag) || broken.has(tag)) {
            continue;
        }
        if (!closing) {
            if (open.has(tag)) {
                broken.add(tag);
            }
            else {
                open.set(tag, at);
            }
        }
        else if (open.has(tag)) {
            found.push({ tag, start: open.get(tag), end: gt + 1 });
            open.delete(tag);
        }
        else {
            broken.add(tag);
        }
    }
    for (const tag of open.keys()) {
        broken.add(tag);
    }
    if (broken.size > 0) {
        found = found.filter((span) => !broken.has(span.tag));
    }
    return found.length < 2 ? found : __senpiGuardOutermost(found);
}
// Spans inside another tag's span are not ours; two spans that cross each other leave the block alone.
function __senpiGuardOutermost(found) {
    found.sort((a, b) => a.start - b.start);
    const outer = [];
    let reach = -1;
    for (const span of found) {
        if (span.start >= reach) {
            outer.push(span);
            reach = span.end;
        }
        else if (span.end > reach) {
            return [];
        }
    }
    return outer;
}
// V8 hashes a string longer than 16,383 characters by its length alone, so a Set of long spans
// compares every same-length span in full: quadratic when a plugin stamps a counter into each copy.
// Spans are filed under a short key (length and three slices) and compared exactly within it.
function __senpiGuardKey(body) {
    const n = body.length;
    if (n <= 512) {
        return body;
    }
    const mid = n >> 1;
    return `${n}:${body.slice(0, 128)}${body.slice(mid - 64, mid + 64)}${body.slice(n - 128)}`;
}
// FNV-1a over the UTF-16 units: the whole text, for buckets the short key cannot split.
function __senpiGuardHash(text) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < text.length; i++) {
        hash = Math.imul(hash ^ text.charCodeAt(i), 0x01000193);
    }
    return hash >>> 0;
}
// True when `body` was seen before under this tag; else files it and returns false. A key holds
// one text, then a short list, then (past 8 texts that share length and slices) a map by full hash.
function __senpiGuardSeen(seen, body) {
    const key = __senpiGuardKey(body);
    let filed = seen.get(key);
    if (filed === undefined) {
        seen.set(key, body);
        return false;
    }
    if (typeof filed === "string") {
        if (filed === body) {
            return true;
        }
        seen.set(key, [filed, body]);
        return false;
    }
    if (Array.isArray(filed)) {
        if (filed.includes(body)) {
            return true;
        }
        if (filed.length < 8) {
            filed.push(body);
            return false;
        }
        const byHash = new Map();
        for (const text of filed) {
            const hash = __senpiGuardHash(text);
            byHash.set(hash, [...(byHash.get(hash) ?? []), text]);
        }
        seen.set(key, byHash);
        filed = byHash;
    }
    const hash = __senpiGuardHash(body);
    const same = filed.get(hash);
    if (same === undefined) {
        filed.set(hash, [body]);
        return false;
    }
    if (same.includes(body)) {
        return true;
    }
    same.push(body);
    return false;
}
function __senpiGuardDedupeText(text, tags, kept, markers) {
    const spans = __senpiGuardSpans(text, tags);
    if (spans.length === 0) {
        return text;
    }
    let out = "";
    let last = 0;
    for (const span of spans) {
        const body = text.slice(span.start, span.end);
        let seen = kept.get(span.tag);
        if (seen === undefined) {
            seen = new Map();
            kept.set(span.tag, seen);
        }
        if (__senpiGuardSeen(seen, body)) {
            let marker = markers.get(span.tag);
            if (marker === undefined) {
                marker = __senpiGuardMarker(span.tag);
                markers.set(span.tag, marker);
            }
            // only where it saves something: a short repeated span stays as it is
            if (marker.length < body.length) {
                out += text.slice(last, span.start) + marker;
                last = span.end;
            }
        }
    }
    return last === 0 ? text : out + text.slice(last);
}
function __senpiGuardDedupe(blocks) {
    if (!Array.isArray(blocks)) {
        return blocks;
    }
    const tags = __senpiGuardConfig().tags;
    const kept = new Map();
    const markers = new Map();
    let out = null;
    for (let index = 0; index < blocks.length; index++) {
        const block = blocks[index];
        if (block === null || typeof block !== "object" || block.type !== "text" || typeof block.text !== "string") {
            continue;
        }
        const text = __senpiGuardDedupeText(block.text, tags, kept, markers);
        if (text !== block.text) {
            if (out === null) {
                out = blocks.slice();
            }
            out[index] = { ...block, text };
        }
    }
    const result = out === null ? blocks : out;
    __senpiGuardOutputs().set(result, result.map((block) => [block, block && block.text]));
    return result;
}
// What __senpiGuardDedupe returned, shared by every patched module of this process (the prompt
// bridge and upstream's dedupe are separate modules), so upstream's wrapper need not dedupe again.
function __senpiGuardOutputs() {
    const key = Symbol.for("senpi-guard.dedupe-outputs");
    return globalThis[key] ?? (globalThis[key] = new WeakMap());
}
// True when `blocks` is an output of __senpiGuardDedupe, unchanged since (same blocks, same texts).
function __senpiGuardIsOurs(blocks) {
    const seen = __senpiGuardOutputs().get(blocks);
    return seen !== undefined && seen.length === blocks.length
        && seen.every(([block, text], index) => blocks[index] === block && (block && block.text) === text);
}
function __senpiGuardCollapsed(blocks) {
    const collapsed = [];
    for (const tag of __senpiGuardConfig().tags) {
        const marker = __senpiGuardMarker(tag);
        for (const block of blocks) {
            if (block !== null && typeof block === "object" && block.type === "text" && typeof block.text === "string") {
                for (let at = block.text.indexOf(marker); at !== -1; at = block.text.indexOf(marker, at + marker.length)) {
                    collapsed.push(tag);
                }
            }
        }
    }
    return collapsed;
}
// Wraps upstream's keep-last dedupeUltraworkBlocks: it would replace our kept first copy whenever a
// variant follows, so when we own ultrawork-mode its result is rebuilt from our keep-first dedupe.
function __senpiGuardUpstream(result, input) {
    if (!__senpiGuardConfig().tags.includes("ultrawork-mode") || !Array.isArray(input)) {
        return result;
    }
    const blocks = __senpiGuardIsOurs(input) ? input : __senpiGuardDedupe(input);
    if (Array.isArray(result)) {
        return blocks;
    }
    if (result === null || typeof result !== "object" || !Array.isArray(result.blocks)) {
        return result;
    }
    const collapsed = __senpiGuardCollapsed(blocks);
    const previous = result.collapsedDirectives;
    const collapsedDirectives = Array.isArray(previous) ? collapsed : collapsed.length;
    return { ...result, blocks, collapsedDirectives };
}
