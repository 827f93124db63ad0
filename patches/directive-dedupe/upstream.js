// Part of the directive-dedupe payload (after dedupe.js): senpi-guard's hand on upstream's own
// keep-last dedupe (2026.8.4-2+) and on senpi's restart binding (2026.8.18-3+).
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
// The tag of every marker in the blocks, found by the text after "{tag}" that all markers share
// (any name with tags = "auto", else the configured ones).
function __senpiGuardMarkersIn(blocks) {
    const template = __senpiGuardConfig().marker;
    const head = template.slice(0, template.indexOf("{tag}"));
    const tail = template.slice(template.indexOf("{tag}") + 5);
    const tags = __senpiGuardTags();
    const collapsed = [];
    for (const block of blocks) {
        if (block === null || typeof block !== "object" || block.type !== "text" || typeof block.text !== "string") {
            continue;
        }
        const text = block.text;
        for (let at = text.indexOf(tail); at !== -1; at = text.indexOf(tail, at + tail.length)) {
            // (the name sits right before the tail: look back at most as far as a name reaches)
            const from = Math.max(0, at - 40 - head.length);
            const found = text.slice(from, at).lastIndexOf(head);
            const tag = found === -1 ? "" : text.slice(from + found + head.length, at);
            const known = tags.includes(tag) || (__senpiGuardAuto() > 0 && /^[A-Za-z][A-Za-z0-9_.:-]{0,39}$/.test(tag));
            if (known && text.startsWith(__senpiGuardMarker(tag), from + found)) {
                collapsed.push(tag);
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
