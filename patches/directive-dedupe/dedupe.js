function __senpiGuardConfig() {
    return /*senpi-guard:config*/{"tags":[],"marker":""}/*senpi-guard:config-end*/;
}
var __senpiGuardMarkers; // (filled on first use: this file may sit below the module's own code)
function __senpiGuardMarker(tag) {
    __senpiGuardMarkers ??= new Map();
    let marker = __senpiGuardMarkers.get(tag);
    if (marker === undefined) {
        marker = __senpiGuardConfig().marker.split("{tag}").join(tag);
        __senpiGuardMarkers.set(tag, marker);
    }
    return marker;
}
var __senpiGuardTagList;
function __senpiGuardTags() {
    return __senpiGuardTagList ??= __senpiGuardConfig().tags;
}
var __senpiGuardTagCache;
function __senpiGuardTagSet(tags) {
    if (__senpiGuardTagCache === undefined) {
        __senpiGuardTagCache = { names: new Set(tags), longest: Math.max(...tags.map((t) => t.length)),
            starts: new Set(tags.map((t) => t.charCodeAt(0))) };
    }
    return __senpiGuardTagCache;
}
// Well-formed spans of one text block, in order. A tag whose spans are unclosed, nested or stray
// in this block is left alone here (fail closed); a span inside another tag's span is not ours.
// Tokens are found by jumping from "<" to "<" and reading at most the longest tag name: linear.
// Where the text repeats a tag's first span, and that span holds no other configured token (it is
// `clean`), the copy is recognised by one comparison and skipped over: its tokens are known.
function __senpiGuardSpans(text, tags, firsts) {
    let at = text.indexOf("<");
    if (at === -1) {
        return [];
    }
    const { names, longest, starts } = __senpiGuardTagSet(tags);
    let open = null; // tag -> [start, tokens counted when it opened] (made when first needed)
    let broken = null;
    let tokens = 0; // configured tokens met so far: a span met none but its own ones is clean
    let found = null; // (made when the first span is found)
    for (; at !== -1; at = text.indexOf("<", at + 1)) {
        const closing = text.charCodeAt(at + 1) === 47;
        const nameStart = closing ? at + 2 : at + 1;
        if (!starts.has(text.charCodeAt(nameStart))) {
            continue; // (code is full of "<" that start no configured tag: `a < b`, `List<T>`)
        }
        const limit = Math.min(text.length, nameStart + longest + 1);
        let gt = nameStart;
        while (gt < limit && text.charCodeAt(gt) !== 62) {
            gt++;
        }
        if (gt === limit || gt === nameStart) {
            continue;
        }
        const tag = text.slice(nameStart, gt);
        if (!names.has(tag)) {
            continue;
        }
        tokens++;
        if (broken !== null && broken.has(tag)) {
            continue;
        }
        if (!closing) {
            const first = open === null || open.size === 0 ? firsts.get(tag) : undefined;
            // (slice and === compare at memcmp speed; startsWith with a position does not)
            if (first !== undefined && first.clean && text.slice(at, at + first.text.length) === first.text) {
                found ??= [];
                found.push({ tag, start: at, end: at + first.text.length, first: true, clean: true });
                at += first.text.length - 1;
                tokens += 1;
            }
            else if (open !== null && open.has(tag)) {
                (broken ??= new Set()).add(tag);
            }
            else {
                (open ??= new Map()).set(tag, [at, tokens]);
            }
        }
        else if (open !== null && open.has(tag)) {
            const [start, counted] = open.get(tag);
            found ??= [];
            found.push({ tag, start, end: gt + 1, first: false, clean: tokens === counted + 1 });
            open.delete(tag);
        }
        else {
            (broken ??= new Set()).add(tag);
        }
    }
    if (open !== null) {
        for (const tag of open.keys()) {
            (broken ??= new Set()).add(tag);
        }
    }
    if (found === null) {
        return [];
    }
    if (broken !== null) {
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
function __senpiGuardDedupeText(text, tags, kept, firsts, collapsed) {
    const spans = __senpiGuardSpans(text, tags, firsts);
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
            firsts.set(span.tag, { text: body, clean: span.clean });
        }
        if (span.first || __senpiGuardSeen(seen, body)) {
            const marker = __senpiGuardMarker(span.tag);
            // only where it saves something: a short repeated span stays as it is
            if (marker.length < body.length) {
                out += text.slice(last, span.start) + marker;
                last = span.end;
                collapsed.push(span.tag);
            }
        }
    }
    return last === 0 ? text : out + text.slice(last);
}
function __senpiGuardDedupe(blocks) {
    if (!Array.isArray(blocks)) {
        return blocks;
    }
    const tags = __senpiGuardTags();
    const kept = new Map();
    const firsts = new Map();
    const collapsed = [];
    let out = null;
    for (let index = 0; index < blocks.length; index++) {
        const block = blocks[index];
        if (block === null || typeof block !== "object" || block.type !== "text" || typeof block.text !== "string") {
            continue;
        }
        if (block.text.indexOf("<") === -1) {
            continue; // no tag at all (most blocks: labels, answers)
        }
        const text = __senpiGuardDedupeText(block.text, tags, kept, firsts, collapsed);
        if (text !== block.text) {
            if (out === null) {
                out = blocks.slice();
            }
            out[index] = { ...block, text };
        }
    }
    const result = out === null ? blocks : out;
    if (__senpiGuardUpstreamSeen()) { // (only a process whose upstream dedupe ran needs the record)
        const texts = new Array(result.length);
        for (let index = 0; index < result.length; index++) {
            texts[index] = result[index] && result[index].text;
        }
        __senpiGuardOutputs().set(result, { texts, collapsed });
    }
    return result;
}
// True once upstream's wrapped dedupe has run in this process (2026.8.4-2+): from then on our
// outputs are recorded so that it can return them without running its own passes.
function __senpiGuardUpstreamSeen() {
    return globalThis[Symbol.for("senpi-guard.upstream-seen")] === true;
}
// What __senpiGuardDedupe returned, shared by every patched module of this process (the prompt
// bridge and upstream's dedupe are separate modules), so upstream's wrapper need not dedupe again.
var __senpiGuardOutputMap;
function __senpiGuardOutputs() {
    if (__senpiGuardOutputMap === undefined) {
        const key = Symbol.for("senpi-guard.dedupe-outputs");
        __senpiGuardOutputMap = globalThis[key] ?? (globalThis[key] = new WeakMap());
    }
    return __senpiGuardOutputMap;
}
// True when `blocks` is an output of __senpiGuardDedupe, unchanged since (the same texts in place).
function __senpiGuardIsOurs(blocks) {
    const record = __senpiGuardOutputs().get(blocks);
    return record !== undefined && record.texts.length === blocks.length
        && record.texts.every((text, index) => (blocks[index] && blocks[index].text) === text);
}
function __senpiGuardMarkersIn(blocks) {
    const collapsed = [];
    for (const tag of __senpiGuardTags()) {
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
// Upstream's result shape ("array", or an object such as {blocks, collapsedDirectives}), learned
// from the first result it really returned: until then its own code always runs.
var __senpiGuardUpstreamShape;
var __senpiGuardSkipped = Symbol.for("senpi-guard.upstream-skipped");
// The entry guard of upstream's dedupe: true when its input is our unchanged output, so its own
// keep-last passes (whose result the wrapper below would replace anyway) need not run.
function __senpiGuardSkip(input) {
    return __senpiGuardUpstreamShape !== undefined && Array.isArray(input)
        && __senpiGuardTags().includes("ultrawork-mode") && __senpiGuardIsOurs(input);
}
// Wraps upstream's keep-last dedupeUltraworkBlocks: it would replace our kept first copy whenever a
// variant follows, so when we own ultrawork-mode its result is rebuilt from our keep-first dedupe.
function __senpiGuardUpstream(result, input) {
    globalThis[Symbol.for("senpi-guard.upstream-seen")] = true;
    if (!__senpiGuardTags().includes("ultrawork-mode") || !Array.isArray(input)) {
        return result;
    }
    if (result === __senpiGuardSkipped) {
        result = __senpiGuardUpstreamShape === "array" ? [] : { ...__senpiGuardUpstreamShape, blocks: [] };
    }
    else if (Array.isArray(result)) {
        __senpiGuardUpstreamShape = "array";
    }
    else if (result !== null && typeof result === "object" && Array.isArray(result.blocks)) {
        const { blocks: _, ...rest } = result;
        __senpiGuardUpstreamShape = rest;
    }
    const ours = __senpiGuardIsOurs(input);
    const blocks = ours ? input : __senpiGuardDedupe(input);
    if (Array.isArray(result)) {
        return blocks;
    }
    if (result === null || typeof result !== "object" || !Array.isArray(result.blocks)) {
        return result;
    }
    // our own output: what our dedupe collapsed; anything else: every marker now in the blocks (kept
    // with the record, so that a later early return reports the same)
    let collapsed;
    if (ours) {
        collapsed = __senpiGuardOutputs().get(blocks).collapsed;
    }
    else {
        collapsed = __senpiGuardMarkersIn(blocks);
        const record = __senpiGuardOutputs().get(blocks);
        if (record !== undefined) {
            record.collapsed = collapsed;
        }
    }
    const previous = result.collapsedDirectives;
    const collapsedDirectives = Array.isArray(previous) ? collapsed.slice() : collapsed.length;
    return { ...result, blocks, collapsedDirectives };
}
// senpi's restart binding (2026.8.18-3 and later) hashes the user and tool-result messages of the
// stored branch, while the next process admits against the messages as the `context` handlers
// return them. When senpi-guard's extension runs in this process it publishes its own rewrite, and
// the branch is hashed as that rewrite sent it: a restart resumes exactly when it would without
// senpi-guard. Without the extension (or on any error) the branch is hashed as stored.
function __senpiGuardBranchAsSent(branch) {
    const asSent = globalThis[Symbol.for("senpi-guard.extension.as-sent")];
    if (typeof asSent !== "function" || !Array.isArray(branch)) {
        return branch;
    }
    try {
        // the messages the context handlers see, in order: custom messages count for the rewrite
        // (a first copy may be in one) though the binding does not hash them
        const messages = [];
        const slots = [];
        branch.forEach((entry, index) => {
            if (entry === null || typeof entry !== "object") {
                return;
            }
            if (entry.type === "message" && entry.message !== null && typeof entry.message === "object") {
                messages.push(entry.message);
                slots.push(index);
            }
            else if (entry.type === "custom_message") {
                messages.push({ role: "custom", customType: entry.customType, content: entry.content ?? [],
                    display: entry.display, details: entry.details });
                slots.push(-1);
            }
        });
        const sent = asSent(messages);
        if (!Array.isArray(sent) || sent.length !== messages.length) {
            return branch;
        }
        let out = null;
        sent.forEach((message, k) => {
            if (slots[k] >= 0 && message !== messages[k]) {
                out ??= branch.slice();
                out[slots[k]] = { ...branch[slots[k]], message };
            }
        });
        return out ?? branch;
    }
    catch {
        return branch;
    }
}
