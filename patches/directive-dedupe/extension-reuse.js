// What the extension keeps between `context` calls (rendered after extension.js, in the same module):
// the dedupe runs once per message over a session, not once per message per call.
// A text's length and a sample of its characters (all of a short one, 16 spread over a long one).
function __senpiGuardSample(h, text) {
    const n = text.length;
    h = Math.imul(h ^ n, 0x01000193);
    const step = n <= 32 ? 1 : Math.floor(n / 16);
    for (let k = n <= 32 ? 0 : step >> 1; k < n; k += step) {
        h = Math.imul(h ^ text.charCodeAt(k), 0x01000193);
    }
    return h;
}

// A message's print, one 32-bit number made without allocating: its role, timestamp and senpi's
// session entry id (a string field senpi copies onto each message it projects from a stored entry),
// the lengths of a command, output or summary, the kind of each part, and each text's length and
// sample (a thinking's or a tool call's name's length; a tool call's arguments are not in it).
function __senpiGuardPrint(message) {
    if (message === null || typeof message !== "object") {
        return message === null ? 1 : 2;
    }
    const mix = (h, n) => Math.imul(h ^ n, 0x01000193);
    const role = message.role;
    let h = mix(0x811c9dc5, typeof role === "string" && role.length > 0 ? role.length * 131 + role.charCodeAt(0) : 3);
    h = mix(h, typeof message.timestamp === "number" ? message.timestamp | 0 : 5);
    for (const field of [message.command, message.output, message.summary]) { // (bash runs, summaries)
        h = mix(h, typeof field === "string" ? field.length : 23);
    }
    const id = message.__piSessionContextEntryId;
    if (typeof id === "string") {
        for (let k = 0; k < id.length; k++) {
            h = mix(h, id.charCodeAt(k));
        }
    }
    const content = message.content;
    if (typeof content === "string") {
        return __senpiGuardSample(h, content) >>> 0;
    }
    if (!Array.isArray(content)) {
        return mix(h, 7) >>> 0;
    }
    h = mix(h, content.length + 11);
    for (let index = 0; index < content.length; index++) {
        const part = content[index];
        if (part === null || typeof part !== "object") {
            h = mix(h, 13);
            continue;
        }
        const type = part.type;
        h = mix(h, typeof type === "string" && type.length > 0 ? type.length * 131 + type.charCodeAt(0) : 17);
        if (typeof part.text === "string") {
            h = __senpiGuardSample(h, part.text);
            continue;
        }
        const other = typeof part.thinking === "string" ? part.thinking : part.name;
        h = mix(h, typeof other === "string" ? other.length : 19);
    }
    return h >>> 0;
}

// ---- the incremental rewrite -------------------------------------------------------------------
// senpi hands each `context` call a fresh deep copy of the conversation: the previous call's
// messages, then what was added since. What the previous call computed is kept (`last`): each
// message's print and output, the dedupe state after the last message (the first copies seen), and
// running figures. A call whose messages start with the previous call's ones (by the identity pass
// below) reuses all of it and processes only the new messages; any other call starts over from the
// first message, as does every session event that can change history (see the handler). So the
// work per call is one identity pass plus what the call adds.
//
// The identity pass (__senpiGuardReusable) checks that the call holds at least as many messages,
// compares in full (role, boundary and every text: what decides an output) the previous call's last
// __senpiGuardTailKeys messages and every "anchor" (a message holding a first copy, a boundary: what
// the dedupe decisions rest on, a few per session), compares the print (a number, see
// __senpiGuardPrint: each text's length and a sample of its characters) of the messages it
// rewrote, whose output is reused (all of them up to 256; beyond that 64 a call, in turn), and
// compares the prints of the first and last messages and of an evenly spaced sample (every message
// below 64 of them, about 48 of a longer history) to start over sooner.
// The trade-offs, plainly:
// - Seen: any change to a first copy or a boundary; any change to a rewritten message's role,
//   entry id, timestamp, number or kind of parts, or the length or sampled characters of a text:
//   on the next call while a history holds up to 256 rewritten messages, and within
//   ceil(rewritten / 64) calls beyond that (until then that message's previous output is sent
//   again). Each print costs a few cache misses (senpi's copy is fresh): all 2,500 of a
//   10,000-message history cost 2.7 ms a call, 64 of them 0.03 ms (measured in senpi's runner).
// - Unseen, by design (a full comparison of every rewritten copy, ~25 kB each, costs more than the
//   whole goal): an in-place rewrite of a rewritten message, by another extension's `context`
//   handler that ran before this one and changed its behaviour since the last call, that keeps
//   every text's length and sampled characters: the previous output would be sent again. And an
//   old message that is neither, changed so that it gains a directive copy, goes out in full
//   (bytes not saved, never a wrong text); an old message turned into a compaction boundary is not
//   seen either (senpi only appends those). senpi itself never changes history in place: it grows,
//   is cut at the end (a retry: the tail check sees it), or changes with an event that starts over
//   (compaction, /tree, fork, a new session, /reload).
// - What was sent before never changes: each kept message gets the very output it got before.
// - The sizes the budget and the call record count are those measured when each message was new.
// - Kept between calls: a number per message, the rewritten messages (senpi holds them for the
//   call anyway), the first copy of each directive and the last few messages' texts.
const __senpiGuardTailKeys = 4;
let __senpiGuardLast = null;

export function __senpiGuardForget() {
    __senpiGuardLast = null;
}

function __senpiGuardStart() {
    return { n: 0, calls: 0, prints: [], outs: [], changed: [], keys: [], anchors: [], anchorKeys: [], notes: [],
        state: __senpiGuardFresh(),
        totals: __senpiGuardTotals(null), bytesIn: 0, bytesOut: 0 };
}

// How many of the previous call's messages this call starts with (0: start over). Touching every
// message costs a cache miss each (senpi's copy is fresh, ~5 kB a message): so the prints of the
// first and last __senpiGuardEnds messages and of __senpiGuardSpread more, evenly spaced from an
// offset that moves on each call (over calls, every position is looked at), are compared.
const __senpiGuardEnds = 8;
const __senpiGuardSpread = 32;
const __senpiGuardRewrittenAll = 256;
const __senpiGuardRewrittenWindow = 64;

function __senpiGuardReusable(last, messages) {
    const n = last.n;
    if (n === 0 || n > messages.length) {
        return 0;
    }
    const keys = last.keys;
    for (let k = 0; k < keys.length; k++) {
        if (!__senpiGuardMatches(keys[k], messages[n - keys.length + k])) {
            return 0;
        }
    }
    // what the dedupe decisions rest on, in full: the messages holding a first copy later ones were
    // collapsed against, and boundaries (a few per session, not one per message)
    const anchors = last.anchors;
    for (let k = 0; k < anchors.length; k++) {
        if (!__senpiGuardMatches(last.anchorKeys[k], messages[anchors[k]])) {
            return 0;
        }
    }
    // the messages whose rewritten output is reused, by their print (each text's length and
    // sample): every one of them while there are up to __senpiGuardRewrittenAll, beyond that
    // __senpiGuardRewrittenWindow of them per call, in turn (each at least every
    // ceil(rewritten / window) calls)
    const prints = last.prints;
    const changed = last.changed;
    const checked = changed.length <= __senpiGuardRewrittenAll ? changed.length : __senpiGuardRewrittenWindow;
    const first = checked === changed.length ? 0 : (last.calls * checked) % changed.length;
    for (let k = 0; k < checked; k++) {
        const index = changed[(first + k) % changed.length];
        if (prints[index] !== __senpiGuardPrint(messages[index])) {
            return 0;
        }
    }
    const same = (index) => prints[index] === __senpiGuardPrint(messages[index]);
    const head = Math.min(n, __senpiGuardEnds);
    for (let index = 0; index < head; index++) {
        if (!same(index)) {
            return 0;
        }
    }
    for (let index = Math.max(head, n - __senpiGuardEnds); index < n; index++) {
        if (!same(index)) {
            return 0;
        }
    }
    const stride = Math.max(1, Math.floor(n / __senpiGuardSpread));
    for (let index = head + (last.calls % stride); index < n - __senpiGuardEnds; index += stride) {
        if (!same(index)) {
            return 0;
        }
    }
    return n;
}

// Processes messages[from…] into `run` (its state, outputs, notes and figures).
function __senpiGuardExtend(run, messages, from) {
    for (let index = from; index < messages.length; index++) {
        const message = messages[index];
        const before = run.state.collapsed.length;
        const seen = run.state.firsts.size + run.state.kept.size;
        const result = __senpiGuardMessage(message, run.state);
        const change = __senpiGuardChange(message, result);
        const note = __senpiGuardNote(message, result, change, run.state.collapsed.slice(before));
        run.prints.push(__senpiGuardPrint(message));
        run.outs.push(result === message ? null : result);
        if (result !== message) {
            run.changed.push(index);
        }
        const boundary = __senpiGuardIsBoundary(message);
        if (boundary || run.state.firsts.size + run.state.kept.size !== seen) {
            run.anchors.push(index);
            run.anchorKeys.push(__senpiGuardMessageKey(message));
        }
        run.notes.push(note);
        __senpiGuardCount(run.totals, note);
        const bytes = __senpiGuardTextBytes(message);
        run.bytesIn += bytes;
        run.bytesOut += result === message ? bytes : __senpiGuardTextBytes(result);
        if (boundary) {
            run.state = __senpiGuardFresh();
            run.totals.epochs++;
        }
    }
    run.n = messages.length;
    run.calls++;
    const tail = Math.max(0, messages.length - __senpiGuardTailKeys);
    run.keys = messages.slice(tail).map(__senpiGuardMessageKey);
}

// The call's output: this call's messages, with each changed one's output in its place (null: none).
function __senpiGuardOutput(run, messages) {
    if (run.changed.length === 0) {
        return null;
    }
    const out = messages.slice();
    for (const index of run.changed) {
        out[index] = run.outs[index];
    }
    return out;
}

// The messages with later copies replaced, or null when nothing changed; incremental (see above).
// The figures of the call stay in __senpiGuardLast for the view and the call's record.
export function __senpiGuardDedupeIncremental(messages) {
    if (!Array.isArray(messages)) {
        return null;
    }
    const last = __senpiGuardLast;
    __senpiGuardLast = null; // (until this call completes: a failure part-way leaves nothing to reuse)
    const reused = last === null ? 0 : __senpiGuardReusable(last, messages);
    const run = reused > 0 ? last : __senpiGuardStart();
    if (reused > 0) {
        run.totals = __senpiGuardTotals(run.totals); // (a call's figures stay as they were taken)
    }
    __senpiGuardExtend(run, messages, reused);
    __senpiGuardLast = run;
    return __senpiGuardOutput(run, messages);
}

// The same rewrite from the first message, keeping nothing (the audit, the restart binding).
export function __senpiGuardDedupeMessages(messages) {
    if (!Array.isArray(messages)) {
        return null;
    }
    const run = __senpiGuardStart();
    __senpiGuardExtend(run, messages, 0);
    return __senpiGuardOutput(run, messages);
}
