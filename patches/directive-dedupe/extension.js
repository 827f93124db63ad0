// The extension layer: a senpi extension on the `context` event, fired before every model call of
// every provider (both lanes of claude-sdk-oauth included). senpi-guard renders this file after the
// payload's functions (same tags, same marker) and installs it in <agent dir>/extensions/.
//
// In message order, for user messages, custom messages (they become user messages) and tool-result
// text, the first span of each distinct content of each configured tag is kept; a later
// byte-identical span becomes the marker. An assistant message carrying a Claude Code compact
// boundary starts a new epoch: the resident session no longer holds the earlier copies, so the
// first copy after the latest boundary is kept in full. Each message's output depends only on it
// and the messages before it, so what was already sent never changes (continuity hashes, prompt
// caches). Untouched messages and parts are returned as the very same objects; the input is never
// changed; on any error nothing is returned and senpi sends the messages as they were.
//
// extension-reuse.js, extension-view.js and extension-budget.js follow in the same file: what is
// kept between calls (so that a call processes only the messages it adds), what each call saved
// and carried, the footer status, /senpi-guard, the budget.
const __senpiGuardRoles = new Set(["user", "custom", "toolResult"]);

function __senpiGuardIsBoundary(message) {
    return message !== null && typeof message === "object" && message.role === "assistant"
        && Array.isArray(message.diagnostics)
        && message.diagnostics.some((d) => d !== null && typeof d === "object" && d.type === "claude_sdk_oauth_compact_boundary");
}

function __senpiGuardMessage(message, state) {
    if (message === null || typeof message !== "object" || !__senpiGuardRoles.has(message.role)) {
        return message;
    }
    const tags = __senpiGuardTags();
    const dedupe = (text) => (text.indexOf("<") === -1 ? text
        : __senpiGuardDedupeText(text, tags, state.kept, state.firsts, state.collapsed));
    if (typeof message.content === "string") {
        const text = dedupe(message.content);
        return text === message.content ? message : { ...message, content: text };
    }
    if (!Array.isArray(message.content)) {
        return message;
    }
    let parts = null;
    message.content.forEach((part, index) => {
        if (part !== null && typeof part === "object" && part.type === "text" && typeof part.text === "string") {
            const text = dedupe(part.text);
            if (text !== part.text) {
                parts ??= message.content.slice();
                parts[index] = { ...part, text };
            }
        }
    });
    return parts === null ? message : { ...message, content: parts };
}

const __senpiGuardFresh = () => ({ kept: new Map(), firsts: new Map(), collapsed: [] });

// What decides a message's output (given the messages before it): its role, a boundary, and the
// text of its content. Kept as strings (never the objects, which senpi may change afterwards).
function __senpiGuardMessageKey(message) {
    if (message === null || typeof message !== "object") {
        return { value: message };
    }
    if (message.role === "assistant") {
        return { role: "assistant", boundary: __senpiGuardIsBoundary(message) };
    }
    const content = message.content;
    if (!__senpiGuardRoles.has(message.role) || (typeof content !== "string" && !Array.isArray(content))) {
        return { role: message.role };
    }
    return { role: message.role, content: typeof content === "string" ? content : content.map(__senpiGuardText) };
}

const __senpiGuardText = (part) => (part !== null && typeof part === "object" && part.type === "text"
    && typeof part.text === "string" ? part.text : null);

// Whether `message` has this key (compared in place: no copy of its texts is made).
function __senpiGuardMatches(key, message) {
    if (message === null || typeof message !== "object") {
        return key.role === undefined && key.value === message;
    }
    if (key.role !== message.role) {
        return false;
    }
    if (message.role === "assistant") {
        return key.boundary === __senpiGuardIsBoundary(message);
    }
    const content = message.content;
    const expected = key.content;
    if (!__senpiGuardRoles.has(message.role) || (typeof content !== "string" && !Array.isArray(content))) {
        return expected === undefined;
    }
    if (typeof content === "string" || !Array.isArray(expected)) {
        return expected === content;
    }
    if (expected.length !== content.length) {
        return false;
    }
    for (let index = 0; index < content.length; index++) {
        if (__senpiGuardText(content[index]) !== expected[index]) {
            return false;
        }
    }
    return true;
}

// How a message's output differs from it: null (the same object), the new string content, or the
// rewritten text parts by index.
function __senpiGuardChange(message, output) {
    if (output === message) {
        return null;
    }
    if (typeof message.content === "string") {
        return { text: output.content };
    }
    return { parts: output.content.flatMap((part, index) => (part === message.content[index] ? [] : [[index, part.text]])) };
}

// ---- what each call sent, for `senpi-guard audit` ---------------------------------------------
// One small custom session entry per call (customType below; senpi never puts a custom entry into
// the context): which layers sent it (this extension's patch version and a print of its dedupe
// settings; the dist layer when the provider is senpi's Claude one) and the text bytes of the
// messages before and after the rewrite. Its data is taken in the `context` handler. The entry is
// not inert: senpi reads the session's entries, so where it is appended matters.
// - A call of a run (ctx.isIdle() false) is appended when the reply's message_start reaches this
//   extension. senpi stores the messages a call is made with from its own event queue, which may
//   run after the `context` handler, and hands the reply's message_start on only after them.
//   Appended from the handler, the entry came before the prompt's user message: as a session's
//   first entry it made senpi 2026.8.22-2's compaction find nothing to compact (prepareCompaction
//   keeps the entries that send nothing just before its cut with it), and a first prompt over the
//   context window was never compacted; every later prompt went out with it.
// - It still comes before the restart-binding marker senpi appends at the reply's message_end. (An
//   entry appended at message_end or turn_end lands between that marker and the assistant message
//   or after it, where senpi's binding check admits only a few entry types of its own: every
//   restart would then re-send the whole history.)
// - A call outside a run and a summary request are recorded at once; a held one whose reply never
//   started (an aborted call) at turn_end, agent_end, session_before_compact or session_shutdown.
// The setting record_calls = "off" turns it off.
const __senpiGuardEntryType = "senpi-guard.sent";

// FNV-1a (32 bits) of the settings that decide what the dedupe sends; the audit asks this very file.
export function __senpiGuardSettingsPrint() {
    const config = __senpiGuardConfig();
    const text = JSON.stringify([config.tags, config.known ?? null, config.min_bytes ?? null, config.marker,
        ...(config.events ? [config.events] : [])]);
    let hash = 0x811c9dc5;
    for (let index = 0; index < text.length; index++) {
        hash = Math.imul(hash ^ text.charCodeAt(index), 0x01000193) >>> 0;
    }
    return hash.toString(16).padStart(8, "0");
}

// The UTF-8 bytes of a message's texts (what the call record counts).
function __senpiGuardTextBytes(message) {
    const content = message !== null && typeof message === "object" ? message.content : null;
    if (typeof content === "string") {
        return Buffer.byteLength(content, "utf8");
    }
    let total = 0;
    for (const part of Array.isArray(content) ? content : []) {
        const text = __senpiGuardText(part);
        total += text === null ? 0 : Buffer.byteLength(text, "utf8");
    }
    return total;
}

// Whether this senpi's Claude prompt-bridge.js carries senpi-guard's dist edit (read once per
// process); null when it cannot be told.
let __senpiGuardDistSeen;
function __senpiGuardDistLayer() {
    if (__senpiGuardDistSeen !== undefined) {
        return __senpiGuardDistSeen;
    }
    __senpiGuardDistSeen = null;
    const get = typeof process.getBuiltinModule === "function" ? (name) => process.getBuiltinModule(name) : () => undefined;
    const fs = get("node:fs");
    const path = get("node:path");
    if (!fs || !path || typeof process.argv[1] !== "string") {
        return null;
    }
    for (let dir = path.dirname(fs.realpathSync(process.argv[1])); ; dir = path.dirname(dir)) {
        const builtin = path.join(dir, "dist", "core", "extensions", "builtin");
        for (const folder of ["claude-sdk-oauth", "claude-agent-sdk"]) {
            const file = path.join(builtin, folder, "prompt-bridge.js");
            if (fs.existsSync(file)) {
                __senpiGuardDistSeen = __senpiGuardDistPatches(fs.readFileSync(file, "utf8"))
                    .some((edit) => edit.name === __senpiGuardPatch.name);
                return __senpiGuardDistSeen;
            }
        }
        if (path.dirname(dir) === dir) {
            return null;
        }
    }
}

const __senpiGuardClaude = new Set(["claude-sdk-oauth", "claude-agent-sdk"]);

// The records of a run's calls whose reply has not started yet, oldest first.
const __senpiGuardHeld = [];

// `run`: what the call's rewrite kept (extension-reuse.js): its message count and text bytes.
function __senpiGuardRecord(pi, ctx, run) {
    if (run === null || __senpiGuardConfig().record_calls === "off" || typeof pi.appendEntry !== "function") {
        return;
    }
    const provider = ctx !== null && typeof ctx === "object" && ctx.model && typeof ctx.model === "object" ? ctx.model.provider : null;
    let dist = null;
    try {
        dist = __senpiGuardClaude.has(provider) ? __senpiGuardDistLayer() : null;
    }
    catch {
        // (unknown)
    }
    const asks = (name) => (ctx !== null && typeof ctx === "object" && typeof ctx[name] === "function" ? ctx[name]() : undefined);
    const compacting = asks("isCompacting") === true;
    const data = {
        v: 1, patch: __senpiGuardPatch.version, settings: __senpiGuardSettingsPrint(), dist,
        messages: run.n, in: run.bytesIn, out: run.bytesOut, ...(compacting ? { compacting } : {}),
    };
    if (!compacting && asks("isIdle") === false) {
        __senpiGuardHeld.push(data);
        if (__senpiGuardHeld.length > 16) { // (a host that never says a reply started: never unbounded)
            pi.appendEntry(__senpiGuardEntryType, __senpiGuardHeld.shift());
        }
        return;
    }
    pi.appendEntry(__senpiGuardEntryType, data);
}

function __senpiGuardAppendHeld(pi) {
    while (__senpiGuardHeld.length > 0) {
        pi.appendEntry(__senpiGuardEntryType, __senpiGuardHeld.shift());
    }
}

export default function senpiGuardDirectiveDedupe(pi) {
    // senpi's restart binding, as the dist layer patches it, hashes the stored branch through this
    // very rewrite (so that a restart resumes whenever it would without senpi-guard)
    globalThis[Symbol.for("senpi-guard.extension.as-sent")] = (messages) => __senpiGuardDedupeMessages(messages) ?? messages;
    let view = { call() {} };
    try {
        view = __senpiGuardView(pi); // (status, /senpi-guard, budget: never in the way of the dedupe)
    }
    catch {
        // (a host without those events or commands: the dedupe alone)
    }
    // what the previous call kept is dropped wherever senpi may change the history it hands in
    for (const event of ["session_start", "session_compact", "session_tree", "session_shutdown", "session_abort"]) {
        pi.on(event, () => {
            __senpiGuardForget();
        });
    }
    // (a held record is appended once senpi has stored the call's messages: see __senpiGuardRecord)
    const appendHeld = () => {
        try {
            __senpiGuardAppendHeld(pi);
        }
        catch {
            __senpiGuardHeld.length = 0; // (the audit infers those calls' configuration instead)
        }
    };
    pi.on("message_start", (event) => {
        if (event && event.message && event.message.role === "assistant") {
            appendHeld();
        }
    });
    for (const event of ["turn_end", "agent_end", "session_before_compact", "session_shutdown"]) {
        pi.on(event, appendHeld);
    }
    pi.on("context", (event, ctx) => {
        let messages;
        try {
            messages = __senpiGuardDedupeIncremental(event && event.messages);
        }
        catch {
            return undefined; // fail closed: senpi sends the messages unchanged
        }
        view.call(event && event.messages, ctx); // (never throws; it only reads what the call carries)
        try {
            __senpiGuardRecord(pi, ctx, __senpiGuardLast);
        }
        catch {
            // (the audit infers this call's configuration instead)
        }
        return messages === null ? undefined : { messages };
    });
}
