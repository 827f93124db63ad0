// What the user sees of the extension inside senpi (rendered after extension.js, in the same module):
// a footer status with what this session's calls did not re-send, a /senpi-guard command with the
// session's figures and the install's state, and a bound on the size of the context each call
// carries (one warning per session; optionally the call stopped). Nothing here changes the messages
// a call returns, and nothing here throws out of a handler: a failure only loses figures.
//
// "Not re-sent" counts, for each call that got a reply, the bytes and copies the extension took out
// of the messages that call carried: the whole context for every provider, and on claude-sdk-oauth's
// delta lane (the call's reply says so) only the new messages it sent.
const __senpiGuardStatusKey = "senpi-guard";
const __senpiGuardImageBytes = 4800; // (an image counts as about 1,200 tokens, as senpi estimates it)

// ---- figures of one call, kept per message beside the dedupe's own reuse (extension.js) ----------
function __senpiGuardTotals(previous) {
    return previous === null ? { bytes: 0, saved: 0, copies: 0, byTag: new Map(), epochs: 1 }
        : { ...previous, byTag: new Map(previous.byTag) };
}

const __senpiGuardBytes = (value) => (typeof value === "string" ? Buffer.byteLength(value, "utf8") : 0);

function __senpiGuardJsonBytes(value) {
    try {
        return value === undefined ? 0 : __senpiGuardBytes(JSON.stringify(value));
    }
    catch {
        return 0;
    }
}

// The UTF-8 bytes a message carries as returned: its texts, thinking, tool calls, a user's command
// and output, a summary; images at a fixed size.
function __senpiGuardSize(message) {
    if (message === null || typeof message !== "object") {
        return 0;
    }
    let bytes = __senpiGuardBytes(message.command) + __senpiGuardBytes(message.output) + __senpiGuardBytes(message.summary);
    const content = message.content;
    if (typeof content === "string") {
        return bytes + __senpiGuardBytes(content);
    }
    for (const part of Array.isArray(content) ? content : []) {
        if (part !== null && typeof part === "object") {
            bytes += __senpiGuardBytes(part.text) + __senpiGuardBytes(part.thinking);
            bytes += part.type === "toolCall" ? __senpiGuardBytes(part.name) + __senpiGuardJsonBytes(part.arguments) : 0;
            bytes += part.type === "image" ? __senpiGuardImageBytes : 0;
        }
    }
    return bytes;
}

// What one message carries and saved: `change` is how its output differs (extension.js), `tags` the
// copies it collapsed. `sent`: claude-sdk-oauth sends it (assistant messages and empty user content
// are not sent on the delta lane).
function __senpiGuardNote(message, result, change, tags) {
    let saved = 0;
    if (change !== null && change.text !== undefined) {
        saved = __senpiGuardBytes(message.content) - __senpiGuardBytes(change.text);
    }
    else if (change !== null) {
        for (const [index, text] of change.parts) {
            saved += __senpiGuardBytes(message.content[index].text) - __senpiGuardBytes(text);
        }
    }
    const sent = message !== null && typeof message === "object" && message.role !== "assistant"
        && !(Array.isArray(message.content) && message.content.length === 0);
    return { size: __senpiGuardSize(result), saved, tags: tags.length > 0 ? tags : null, sent };
}

function __senpiGuardCount(totals, note) {
    totals.bytes += note.size;
    totals.saved += note.saved;
    for (const tag of note.tags ?? []) {
        totals.copies++;
        totals.byTag.set(tag, (totals.byTag.get(tag) ?? 0) + 1);
    }
}

// The saving on the last `count` sent messages of a call (what the delta lane sent).
function __senpiGuardTail(call, count) {
    const part = { saved: 0, copies: 0, byTag: new Map() };
    for (let index = call.n - 1, seen = 0; index >= 0 && seen < count; index--) {
        const note = call.notes[index];
        if (note.sent) {
            seen++;
            part.saved += note.saved;
            for (const tag of note.tags ?? []) {
                part.copies++;
                part.byTag.set(tag, (part.byTag.get(tag) ?? 0) + 1);
            }
        }
    }
    return part;
}

// The lane a reply says its call took (claude-sdk-oauth's continuity record), else the whole context.
function __senpiGuardLane(message) {
    const records = Array.isArray(message.diagnostics) ? message.diagnostics.filter((d) => d !== null
        && typeof d === "object" && d.type === "claude_sdk_oauth_session_continuity" && d.details) : [];
    const details = records.length > 0 ? records[records.length - 1].details : null;
    const kind = details !== null && typeof details.kind === "string" ? details.kind : "whole context";
    const only = (kind === "delta" || kind === "fork") && Number.isInteger(details.deltaMessages) ? details.deltaMessages : null;
    return { kind, only };
}

// ---- the session's figures -----------------------------------------------------------------------
const __senpiGuardFigures = (id) => ({ id, calls: 0, saved: 0, copies: 0, byTag: new Map(), lanes: new Map(),
    pending: null, latest: null, warned: false, blocked: 0 });

function __senpiGuardSessionId(ctx) {
    const manager = ctx && ctx.sessionManager;
    const id = manager && typeof manager.getSessionId === "function" ? manager.getSessionId() : undefined;
    return typeof id === "string" ? id : null;
}

// The call's figures, taken when the context goes out; they count once its reply arrives.
function __senpiGuardTake(messages) {
    const last = __senpiGuardLast;
    if (last === null || !Array.isArray(messages) || last.notes.length < messages.length) {
        return null;
    }
    const t = last.totals;
    return { n: messages.length, notes: last.notes, saved: t.saved, copies: t.copies, byTag: new Map(t.byTag),
        bytes: t.bytes, epochs: t.epochs, measure: null };
}

function __senpiGuardCommit(figures, message) {
    const call = figures.pending;
    figures.pending = null;
    if (call === null || message.stopReason === "error" || message.stopReason === "aborted") {
        return false;
    }
    const lane = __senpiGuardLane(message);
    const part = lane.only === null ? call : __senpiGuardTail(call, lane.only);
    figures.calls++;
    figures.saved += part.saved;
    figures.copies += part.copies;
    for (const [tag, n] of part.byTag) {
        figures.byTag.set(tag, (figures.byTag.get(tag) ?? 0) + n);
    }
    figures.lanes.set(lane.kind, (figures.lanes.get(lane.kind) ?? 0) + 1);
    figures.latest = call;
    return true;
}

// ---- words and numbers ---------------------------------------------------------------------------
const __senpiGuardNum = (n) => Math.round(n).toLocaleString("en-US");
const __senpiGuardMany = (n, word, words = `${word}s`) => `${__senpiGuardNum(n)} ${n === 1 ? word : words}`;

// A size in SI units (1 kB = 1,000 B): whole bytes below 1 kB, then three figures ("9.5 kB",
// "199 kB", "1.8 MB"), rounded half up in whole numbers (as senpi-guard's ui.size says it).
const __senpiGuardUnits = ["B", "kB", "MB", "GB", "TB"];

export function __senpiGuardSI(bytes) {
    const n = Math.max(0, Math.floor(bytes + 0.5));
    if (n < 1000) {
        return `${n} B`;
    }
    for (let unit = 1; unit < __senpiGuardUnits.length; unit++) {
        const step = 1000 ** unit;
        const tenths = Math.floor((n * 10 + step / 2) / step);
        if (tenths < 1000) {
            return `${Math.floor(tenths / 10)}.${tenths % 10} ${__senpiGuardUnits[unit]}`;
        }
        const whole = Math.floor((n + step / 2) / step);
        if (whole < 1000 || unit === __senpiGuardUnits.length - 1) {
            return `${__senpiGuardNum(whole)} ${__senpiGuardUnits[unit]}`;
        }
    }
    return `${n} B`;
}

function __senpiGuardStatusText(figures) {
    if (figures.copies === 0) {
        return "senpi-guard: on, no repeats yet";
    }
    return `senpi-guard: ${__senpiGuardMany(figures.copies, "repeat")}, ${__senpiGuardSI(figures.saved)} not re-sent`;
}

const __senpiGuardHasUI = (ctx) => ctx !== null && typeof ctx === "object" && ctx.hasUI === true
    && ctx.ui !== null && typeof ctx.ui === "object";

function __senpiGuardTell(ctx, text, type) {
    if (__senpiGuardHasUI(ctx) && typeof ctx.ui.notify === "function") {
        ctx.ui.notify(text, type);
    }
    else {
        process.stderr.write(`${text}\n`); // (print and json modes have no UI: the user reads stderr)
    }
}

function __senpiGuardShowStatus(ctx, figures) {
    if (__senpiGuardHasUI(ctx) && typeof ctx.ui.setStatus === "function") {
        ctx.ui.setStatus(__senpiGuardStatusKey, __senpiGuardStatusText(figures));
    }
}

// ---- the install's state, read at command time only ----------------------------------------------
// A dist file's header names every patch on it: `// senpi-guard: patched by A v1 (role=r config-sha256=…),
// B v2 (…) original-sha256=…`; files patched by senpi-guard before composition carry one line per patch,
// `// senpi-guard: A v1 role=r original-sha256=… config-sha256=…`, until the next apply.
const __senpiGuardFileHeader = /^\/\/ senpi-guard: patched by (.+) original-sha256=[0-9a-f]{64}\r?$/m;
const __senpiGuardHeaderEntry = /([\w.-]+) v(\d+) \(role=([\w-]+) config-sha256=[0-9a-f]{16}\)/g;
const __senpiGuardOldHeader = /^\/\/ senpi-guard: ([\w.-]+) v(\d+) role=([\w-]+) original-sha256=[0-9a-f]{64} config-sha256=[0-9a-f]{16}\r?$/gm;

// The patches a dist file's text carries, in either header format: [{name, version, role}].
export function __senpiGuardDistPatches(text) {
    if (!text.includes("// senpi-guard: ")) {
        return [];
    }
    const composed = __senpiGuardFileHeader.exec(text);
    const matches = composed !== null ? composed[1].matchAll(__senpiGuardHeaderEntry) : text.matchAll(__senpiGuardOldHeader);
    return [...matches].map((m) => ({ name: m[1], version: Number(m[2]), role: m[3] }));
}

export function __senpiGuardModules() {
    const get = typeof process.getBuiltinModule === "function" ? (name) => process.getBuiltinModule(name) : () => undefined;
    const fs = get("node:fs");
    const path = get("node:path");
    return fs && path ? { fs, path } : null;
}

// The senpi package this process runs (its bin script, resolved, lies under it).
export function __senpiGuardPackage({ fs, path }) {
    const script = process.argv[1];
    let dir = typeof script === "string" && script !== "" ? path.dirname(fs.realpathSync(script)) : null;
    for (; dir !== null; dir = path.dirname(dir) === dir ? null : path.dirname(dir)) {
        try {
            const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
            if (manifest.name === "@code-yeongyu/senpi") {
                return { dir, version: String(manifest.version) };
            }
        }
        catch {
            // (no package.json here: look further up)
        }
    }
    return null;
}

// senpi-guard's edits in this senpi's built-in extensions, by file: "<patch> v<version> (<role>)".
function __senpiGuardDistEdits({ fs, path }, dir) {
    const builtin = path.join(dir, "dist", "core", "extensions", "builtin");
    const found = [];
    for (const folder of fs.readdirSync(builtin, { withFileTypes: true })) {
        if (!folder.isDirectory()) {
            continue;
        }
        for (const name of fs.readdirSync(path.join(builtin, folder.name))) {
            const text = name.endsWith(".js") ? fs.readFileSync(path.join(builtin, folder.name, name), "utf8") : "";
            for (const edit of __senpiGuardDistPatches(text)) {
                found.push(`${folder.name}/${name}: ${edit.name} v${edit.version} (${edit.role})`);
            }
        }
    }
    return found;
}

function __senpiGuardInstall() {
    const modules = __senpiGuardModules();
    if (modules === null) {
        return ["dist layer: unknown (this node cannot read files from an extension)"];
    }
    const own = (() => {
        try {
            const path = modules.fs.realpathSync(new URL(import.meta.url));
            const first = modules.fs.readFileSync(path, "utf8").split("\n", 1)[0];
            const header = /^\/\/ senpi-guard: ([\w.-]+) v(\d+) layer=extension config-sha256=(\w+)/.exec(first);
            return header === null ? `${path} (no senpi-guard header)` : `${header[1]} v${header[2]} (config ${header[3]}) at ${path}`;
        }
        catch {
            return "unknown";
        }
    })();
    const lines = [`extension layer: ${own}`];
    const pkg = __senpiGuardPackage(modules);
    if (pkg === null) {
        return [...lines, `dist layer: unknown (${process.argv[1]} is not inside a senpi package)`];
    }
    const edits = __senpiGuardDistEdits(modules, pkg.dir);
    return [...lines, edits.length === 0
        ? `dist layer: absent for this senpi (${pkg.version} at ${pkg.dir}): run \`senpi-guard apply\``
        : `dist layer: present for this senpi (${pkg.version} at ${pkg.dir}):`, ...edits.map((e) => `  ${e}`)];
}

// ---- what /senpi-guard says --------------------------------------------------------------------
function __senpiGuardReport(figures) {
    const tokens = (bytes) => `≈${__senpiGuardNum(bytes / 4)} tokens`;
    const lines = [`senpi-guard, this session: ${__senpiGuardMany(figures.calls, "call")} with a reply`
        + (figures.blocked > 0 ? `, ${figures.blocked} stopped by budget.block_at` : "")];
    lines.push(`not re-sent: ${__senpiGuardMany(figures.copies, "copy", "copies")}, `
        + `${__senpiGuardNum(figures.saved)} bytes (${tokens(figures.saved)})`);
    for (const [tag, n] of [...figures.byTag].sort((a, b) => b[1] - a[1])) {
        lines.push(`  <${tag}>: ${__senpiGuardMany(n, "copy", "copies")}`);
    }
    lines.push("  (counted per call: what the extension took out of the messages each call carried; "
        + "on claude-sdk-oauth's delta lane only the new messages it sent)");
    if (figures.lanes.size > 0) {
        lines.push(`lanes: ${[...figures.lanes].map(([kind, n]) => `${kind} ${n}`).join(", ")}`);
    }
    const call = figures.latest;
    if (call !== null) {
        const measure = call.measure;
        lines.push(`latest call: ${__senpiGuardMany(call.n, "message")}, ${__senpiGuardNum(call.bytes)} bytes in its context, `
            + `${__senpiGuardMany(call.copies, "copy", "copies")} collapsed in it, ${__senpiGuardMany(call.epochs, "epoch")}`
            + (measure !== null && measure.window !== null ? `; ${__senpiGuardShare(measure)}` : ""));
    }
    const { warnAt, blockAt } = __senpiGuardBudgetSettings();
    const share = (at) => (at > 0 ? `at ${Math.round(at * 100)}% of the context window` : "off");
    const measured = (figures.pending ?? call)?.measure ?? null; // (the call under way, else the latest)
    const inactive = (warnAt > 0 || blockAt > 0) && measured !== null && measured.window === null
        ? " (inactive: the model declares no context window)" : "";
    lines.push(`budget: warn ${share(warnAt)}, block ${share(blockAt)}${inactive}`);
    try {
        lines.push(...__senpiGuardInstall());
    }
    catch (error) {
        lines.push(`dist layer: unknown (${String(error && error.message ? error.message : error).split("\n")[0]})`);
    }
    return lines.join("\n");
}

// ---- the handlers ----------------------------------------------------------------------------------
function __senpiGuardView(pi) {
    let figures = __senpiGuardFigures(null);
    const current = (ctx) => {
        const id = __senpiGuardSessionId(ctx);
        if (id !== null && id !== figures.id) {
            figures = __senpiGuardFigures(id);
        }
        return figures;
    };
    const on = (event, handler) => pi.on(event, (e, ctx) => {
        try {
            handler(e, ctx);
        }
        catch {
            // (only figures are lost)
        }
    });
    on("session_start", (event, ctx) => {
        figures = event && event.reason === "reload" ? current(ctx) : __senpiGuardFigures(__senpiGuardSessionId(ctx));
        __senpiGuardShowStatus(ctx, figures);
    });
    on("message_end", (event, ctx) => {
        const message = event && event.message;
        if (message && message.role === "assistant" && __senpiGuardCommit(current(ctx), message)) {
            __senpiGuardShowStatus(ctx, figures);
        }
    });
    on("agent_settled", () => __senpiGuardStopped());
    on("session_shutdown", () => __senpiGuardStopped());
    try {
        __senpiGuardCommand(pi, current);
    }
    catch {
        // (another extension may own the name: the status and the budget still work)
    }
    return {
        call(messages, ctx) {
            try {
                if (ctx === null || typeof ctx !== "object" || (typeof ctx.isCompacting === "function" && ctx.isCompacting())) {
                    return; // (a compaction's summary request: not one of the conversation's calls, never stopped)
                }
                const call = __senpiGuardTake(messages);
                if (call !== null) {
                    const session = current(ctx);
                    session.pending = call;
                    call.measure = __senpiGuardMeasure(call, ctx);
                    __senpiGuardBudget(session, call, ctx);
                }
            }
            catch {
                // (only figures are lost; the call goes out as the dedupe returned it)
            }
        },
    };
}

// /senpi-guard: the figures of the session `current(ctx)` names, and the install's state.
function __senpiGuardCommand(pi, current) {
    if (typeof pi.registerCommand !== "function") {
        return;
    }
    pi.registerCommand("senpi-guard", {
        description: "What senpi-guard did not re-send in this session, and whether its layers are installed",
        handler: async (_args, ctx) => {
            let text;
            try {
                text = __senpiGuardReport(current(ctx));
            }
            catch (error) {
                text = `senpi-guard: no figures (${String(error).split("\n")[0]})`;
            }
            if (__senpiGuardHasUI(ctx) && typeof ctx.ui.notify === "function") {
                ctx.ui.notify(text, "info");
            }
            else {
                process.stdout.write(`${text}\n`);
            }
        },
    });
}
