function __senpiGuardConfig() {
    return /*senpi-guard:config*/{"tags":[],"marker":""}/*senpi-guard:config-end*/;
}
function __senpiGuardMarker(tag) {
    return __senpiGuardConfig().marker.split("{tag}").join(tag);
}
// Well-formed spans of one text block, in order. A tag whose spans are unclosed, nested or stray
// in this block is left alone here (fail closed); a span inside another tag's span is not ours.
function __senpiGuardSpans(text, tags) {
    const found = [];
    for (const tag of tags) {
        const open = "<" + tag + ">";
        const close = "</" + tag + ">";
        if (text.indexOf(open) === -1 && text.indexOf(close) === -1) {
            continue;
        }
        const spans = [];
        let pos = 0;
        let wellFormed = true;
        for (;;) {
            const start = text.indexOf(open, pos);
            const strayClose = text.indexOf(close, pos);
            if (start === -1) {
                wellFormed = strayClose === -1;
                break;
            }
            const end = text.indexOf(close, start + open.length);
            const inner = text.indexOf(open, start + open.length);
            if (strayClose < start || end === -1 || (inner !== -1 && inner < end)) {
                wellFormed = false;
                break;
            }
            spans.push({ tag, start, end: end + close.length });
            pos = end + close.length;
        }
        if (wellFormed) {
            for (const span of spans) {
                found.push(span);
            }
        }
    }
    if (found.length < 2) {
        return found;
    }
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
function __senpiGuardDedupeText(text, tags, kept) {
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
            seen = new Set();
            kept.set(span.tag, seen);
        }
        if (seen.has(body)) {
            out += text.slice(last, span.start) + __senpiGuardMarker(span.tag);
            last = span.end;
        }
        else {
            seen.add(body);
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
    let out = null;
    for (let index = 0; index < blocks.length; index++) {
        const block = blocks[index];
        if (block === null || typeof block !== "object" || block.type !== "text" || typeof block.text !== "string") {
            continue;
        }
        const text = __senpiGuardDedupeText(block.text, tags, kept);
        if (text !== block.text) {
            if (out === null) {
                out = blocks.slice();
            }
            out[index] = { ...block, text };
        }
    }
    return out === null ? blocks : out;
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
    const blocks = __senpiGuardDedupe(input);
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
