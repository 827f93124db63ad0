// senpi-guard's audit server. The first stdin line is a JSON job naming the modules to import: the
// prompt serialiser (unpatched and patched), upstream's dedupe when present, the delta serialiser,
// and senpi's own session functions when they import. Then one request per line:
//   {"op":"reset"}                                   a new session starts
//   {"op":"put","id","message"|"entry"}              a context message (or raw session entry)
//   {"op":"measure","ids","leaf","lane","delta","tools"}
// Each "measure" gets one reply line, in order; Python may send many before reading. Only the
// messages of the measured context are kept, so memory follows the context, not the file. Every
// line this script writes starts with the job's replyTag: what senpi's code prints is not a reply.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
const job = JSON.parse((await lines.next()).value ?? "{}");
const TAG = job.replyTag ?? "";

async function load(spec, which = "original") {
    if (!spec || !spec[which]) {
        return null;
    }
    const mod = await import(pathToFileURL(spec[which]).href);
    if (typeof mod[spec.export] !== "function") {
        throw new Error(`${spec[which]} does not export a function ${spec.export}`);
    }
    return mod[spec.export];
}

const isText = (b) => b !== null && typeof b === "object" && b.type === "text" && typeof b.text === "string";
const blocksOf = (r) => (Array.isArray(r) ? r : r && Array.isArray(r.blocks) ? r.blocks : null);
const bytes = (text) => Buffer.byteLength(text, "utf8");

// What the patch counts in a text, from its own module (`audit_counts` in its patch.toml): the
// spans it keeps one copy of, and its markers per tag. A patch that names none counts nothing.
const counting = job.counts ? await import(pathToFileURL(job.counts).href) : null;
const spansOf = counting ? (text) => counting.spansOf(text, job) : () => [];
const countMarkers = counting ? (texts) => counting.countMarkers(texts, job) : () => ({});

const spanCache = new WeakMap(); // message object -> its spans (the same object across calls)
function messageSpans(message) {
    if (message !== null && typeof message === "object" && spanCache.has(message)) {
        return spanCache.get(message);
    }
    const spans = findMessageSpans(message);
    if (message !== null && typeof message === "object") {
        spanCache.set(message, spans);
    }
    return spans;
}

function findMessageSpans(message) {
    const parts = typeof message?.content === "string" ? [{ type: "text", text: message.content }] : Array.isArray(message?.content) ? message.content : [];
    const spans = new Set();
    for (const part of parts) {
        if (isText(part)) {
            for (const span of spansOf(part.text)) {
                spans.add(span);
            }
        }
    }
    return spans;
}

// Length of the common prefix: whole chunks compared as strings (memcmp speed), then the last chunk
// character by character.
function commonPrefix(a, b) {
    const n = Math.min(a.length, b.length);
    const CHUNK = 8192;
    let i = 0;
    while (i + CHUNK <= n && a.slice(i, i + CHUNK) === b.slice(i, i + CHUNK)) {
        i += CHUNK;
    }
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) {
        i++;
    }
    return i;
}

const CUSTOM_PREFIX = "mcp__custom-tools__";
const BUILT_IN = new Set(["read", "write", "edit", "bash", "grep", "find", "glob"]);
function customToolNames(tools) {
    const map = new Map();
    for (const name of tools ?? []) {
        if (!BUILT_IN.has(String(name).toLowerCase())) {
            map.set(name, CUSTOM_PREFIX + name);
            map.set(String(name).toLowerCase(), CUSTOM_PREFIX + name);
        }
    }
    return map;
}

// Why senpi's own session code is not used, each said in the ready line (never a silent fallback).
const fallback = [];
const why = (error) => String(error?.message ?? error).split("\n")[0].slice(0, 300);
// (senpi's delta serialiser, when it does not import — a dist-only build without its dependencies —
// leaves the other calls measured: a delta call says why it is not)
let deltaMissing = null;
const fns = {
    original: await load(job.prompt),
    candidate: (await load(job.prompt, "candidate")) ?? (await load(job.prompt)),
    upOriginal: await load(job.upstream),
    upCandidate: (await load(job.upstream, "candidate")) ?? (await load(job.upstream)),
    delta: await load(job.delta).catch((error) => {
        deltaMissing = why(error);
        fallback.push(`senpi's delta serialiser did not import: ${deltaMissing}`);
        return null;
    }),
};
// The extension layer (rendered by senpi-guard), run on the whole context before the call is made.
const extensionModule = job.extension ? await import(pathToFileURL(job.extension).href) : null;
const extension = extensionModule ? extensionModule.__senpiGuardDedupeMessages : null;
const settingsPrint = typeof extensionModule?.__senpiGuardSettingsPrint === "function" ? extensionModule.__senpiGuardSettingsPrint() : null;
let rewrite = { messages: null, rewritten: null }; // (the last call's rewrite: each measure asks twice)
function withExtension(messages) {
    if (rewrite.messages !== messages) {
        rewrite = { messages, rewritten: extension ? extension(messages) ?? messages : messages };
    }
    return rewrite.rewritten;
}
const textBytes = (messages) => contextTexts(messages).reduce((n, t) => n + bytes(t), 0);
let session = null;
if (job.session) {
    try {
        session = { build: await load(job.session.context), convert: await load(job.session.convert) };
    }
    catch (error) {
        fallback.push(`senpi's buildSessionContext/convertToLlm did not import: ${why(error)}`);
    }
}
if (session && job.branch) {
    session.branch = await load(job.branch).catch((error) => {
        fallback.push(`senpi's generateBranchSummary did not import: ${why(error)}`);
        return null;
    });
}

const store = new Map(); // id -> {message | entry, spans}
// The four configurations every call is measured in: senpi as installed, with the dist patch, with
// the extension alone, and with both layers.
const CONFIGS = ["installed", "dist", "extension", "both"];
const fresh = () => Object.fromEntries(CONFIGS.map((c) => [c, null]));
let previous = fresh(); // per configuration, the texts of the previous call of the same kind
let previousContext = fresh(); // (other providers: the previous call's message texts)
let seenIn = Object.fromEntries(CONFIGS.map((c) => [c, new Map()])); // span -> the text it was last found in
let previousSent = 0;

function contextOf(request) {
    const missing = request.ids.find((id) => !store.has(id));
    if (missing !== undefined) {
        throw new Error(`entry ${missing} never arrived whole (its line changed while it was read)`);
    }
    if (session) {
        const entries = request.ids.map((id) => store.get(id).entry);
        const byId = new Map(entries.map((e) => [e.id, e]));
        const messages = session.convert(session.build(entries, request.leaf, byId).messages);
        // (a branch summary sends only the messages past where the branches meet)
        return messages;
    }
    return request.ids.map((id) => store.get(id).message);
}

function spansOfContext(messages, request) {
    const distinct = new Set();
    if (!session) {
        for (const id of request.ids) {
            for (const span of store.get(id).spans) {
                distinct.add(span);
            }
        }
        return distinct;
    }
    for (const message of messages) {
        for (const span of messageSpans(message)) {
            distinct.add(span);
        }
    }
    return distinct;
}

function runUpstream(fn, blocks) {
    return fn ? blocksOf(fn(blocks)) : blocks;
}

// One side of a full re-send: its text blocks, their bytes, and the bytes past the longest common
// prefix with the previous full re-send. Blocks are compared first as whole strings (the same
// message text is the same string object from call to call, so that is a pointer compare), then
// the first differing pair character by character.
function side(blocks, before) {
    return sideOfTexts(blocks.filter(isText).map((b) => b.text), before);
}

function sideOfTexts(texts, before) {
    const sizes = texts.map(bytes);
    const total = sizes.reduce((n, x) => n + x, 0);
    if (before === null) {
        return { texts, total, fresh: total };
    }
    let i = 0;
    while (i < texts.length && i < before.length && texts[i] === before[i]) {
        i++;
    }
    let fresh = 0;
    for (let k = i; k < texts.length; k++) {
        fresh += sizes[k];
    }
    if (i < texts.length && i < before.length) {
        fresh -= bytes(texts[i].slice(0, commonPrefix(texts[i], before[i])));
    }
    return { texts, total, fresh };
}

// Whether each distinct span is still in a side's text. The text a span was found in last call is
// tried first: message texts are the same string objects from call to call, so that is usually
// one pointer compare. Otherwise includes(), which a long span makes skip ahead quickly.
// Spans are filed by a short key (length and two slices): V8 hashes long strings by length only.
const spanKey = (span) => `${span.length}:${span.slice(0, 200)}:${span.slice(-200)}`;
function keptOf(distinct, texts, lastSeen) {
    let kept = 0;
    for (const span of distinct) {
        const key = spanKey(span);
        const seen = lastSeen.get(key)?.find((hit) => hit.span === span);
        if (seen && texts.includes(seen.text)) {
            kept++;
            continue;
        }
        const text = texts.find((t) => t.length >= span.length && t.includes(span));
        if (text !== undefined) {
            kept++;
            const hits = lastSeen.get(key) ?? [];
            lastSeen.set(key, hits);
            if (seen) {
                seen.text = text;
            }
            else {
                hits.push({ span, text });
            }
        }
    }
    return kept;
}

// The tags of a context whose copies differ (more than one distinct span of that tag), and how many
// distinct copies each has: keep-first keeps every one of them, keep-last only the last.
function variedTags(distinct) {
    const copies = {};
    for (const span of distinct) {
        const tag = /^<([^\s>]+)/.exec(span)?.[1];
        if (tag !== undefined) {
            copies[tag] = (copies[tag] ?? 0) + 1;
        }
    }
    return Object.fromEntries(Object.entries(copies).filter(([, n]) => n > 1));
}

function measureFull(messages, request, names) {
    const rewritten = withExtension(messages);
    const pipeline = {
        installed: () => runUpstream(fns.upOriginal, blocksOf(fns.original({ messages: [...messages] }, names))),
        dist: () => runUpstream(fns.upCandidate, blocksOf(fns.candidate({ messages: [...messages] }, names))),
        extension: () => runUpstream(fns.upOriginal, blocksOf(fns.original({ messages: [...rewritten] }, names))),
        both: () => runUpstream(fns.upCandidate, blocksOf(fns.candidate({ messages: [...rewritten] }, names))),
    };
    const distinct = spansOfContext(messages, request);
    const sides = {};
    for (const config of CONFIGS) {
        // (when the extension changes nothing, its sides are the installed and dist ones)
        const same = rewritten === messages && (config === "extension" || config === "both");
        const blocks = same ? null : pipeline[config]();
        const texts = same ? sides[config === "extension" ? "installed" : "dist"].texts : null;
        sides[config] = texts ? sideOfTexts(texts, previous[config]) : side(blocks, previous[config]);
        sides[config].kept = keptOf(distinct, sides[config].texts, seenIn[config]);
    }
    previous = Object.fromEntries(CONFIGS.map((c) => [c, sides[c].texts]));
    return reply(sides, { collapsed: countMarkers(sides.dist.texts), directives: distinct.size, varied: variedTags(distinct) });
}

function reply(sides, extra) {
    const pick = (key) => Object.fromEntries(CONFIGS.map((c) => [c, sides[c][key]]));
    return { bytes: pick("total"), cacheWrite: pick("fresh"), kept: pick("kept"), ...extra };
}

// What the resident lane counts as sent: user and tool-result messages, minus literally empty users.
const sentOf = (messages) => messages.filter((m) => m.role === "toolResult" || (m.role === "user" && !(Array.isArray(m.content) && m.content.length === 0)));

function measureDelta(messages, request, names) {
    const sent = sentOf(messages);
    const count = Number.isInteger(request.delta) ? request.delta : Math.max(sent.length - previousSent, 0);
    const delta = (list) => {
        const texts = count > 0 ? blocksOf(fns.delta(list.slice(-count), names)).filter(isText).map((b) => b.text) : [];
        return { total: texts.reduce((n, t) => n + bytes(t), 0), fresh: null, kept: null };
    };
    const plain = delta(sent);
    const rewritten = withExtension(messages);
    const ext = rewritten === messages ? plain : delta(sentOf(rewritten));
    const distinct = new Set();
    for (const message of count > 0 ? sent.slice(-count) : []) {
        for (const span of messageSpans(message)) {
            distinct.add(span);
        }
    }
    return reply({ installed: plain, dist: plain, extension: ext, both: ext },
        { collapsed: {}, directives: distinct.size, deltaMessages: Math.min(count, sent.length) });
}

// Every other provider: the whole context, as the `context` handlers returned it, in its own
// request format; counted as the text of every message (system prompt, tools, images not counted).
function contextTexts(messages) {
    const texts = [];
    for (const m of messages) {
        if (typeof m?.content === "string") {
            texts.push(m.content);
        }
        else if (Array.isArray(m?.content)) {
            for (const part of m.content) {
                if (isText(part)) {
                    texts.push(part.text);
                }
            }
        }
    }
    return texts;
}

function measureContext(messages, request) {
    const rewritten = withExtension(messages);
    const distinct = spansOfContext(messages, request);
    const sides = {};
    for (const config of CONFIGS) {
        const list = config === "installed" || config === "dist" ? messages : rewritten;
        sides[config] = sideOfTexts(contextTexts(list), previousContext[config]);
        sides[config].kept = keptOf(distinct, sides[config].texts, seenIn[config]);
    }
    previousContext = Object.fromEntries(CONFIGS.map((c) => [c, sides[c].texts]));
    return reply(sides, { collapsed: {}, directives: distinct.size, varied: variedTags(distinct) });
}

// A compaction's or branch summary's request: the summarised messages, as the `context` handlers
// returned them, and senpi's instruction after them (not counted). senpi 2026.8.22-2 sends them as
// the provider's own context (measured: the request starts with the previous call's messages, so a
// prompt cache reads that prefix): counted as another provider call's text would be.
function measureSummary(messages, request) {
    const result = measureContext(messages, request);
    result.collapsed = countMarkers(contextTexts(withExtension(messages)));
    return result;
}

// A branch summary's request: senpi serialises the branch it left into one user message and sends
// it without running any `context` handler, so every configuration sends the same bytes. Measured
// by senpi's own generateBranchSummary, stopped at the provider call it makes; without senpi's
// session code, estimated from the message texts (and said so).
const STOP = new Error("senpi-guard: the request is captured");
async function branchRequest(entries, window) {
    let captured = null;
    const streamFn = (_model, context) => {
        captured = context;
        throw STOP;
    };
    const model = { id: "senpi-guard-audit", provider: "senpi-guard-audit", contextWindow: window ?? undefined };
    try {
        await session.branch(entries, { model, streamFn });
    }
    catch (error) {
        if (error !== STOP) {
            throw error;
        }
    }
    return captured === null ? [] : contextTexts(captured.messages);
}

// (the wrapper and instruction of senpi 2026.8.22-2's request, measured there; an estimate elsewhere)
const BRANCH_FRAME_BYTES = 722;
const BRANCH_ROLES = { user: "[User]: ", assistant: "[Assistant]: " };
function estimatedBranchTexts(request) {
    const parts = [];
    for (const id of request.ids) {
        const stored = store.get(id);
        const message = stored.message ?? stored.entry?.message ?? null;
        const text = contextTexts([message]).join("\n");
        if (message && BRANCH_ROLES[message.role] !== undefined && text) {
            parts.push(BRANCH_ROLES[message.role] + text);
        }
    }
    return parts.length ? [parts.join("\n\n")] : [];
}

async function measureBranch(request) {
    const exact = Boolean(session?.branch);
    const texts = exact ? await branchRequest(request.ids.map((id) => store.get(id).entry), request.window) : estimatedBranchTexts(request);
    const distinct = new Set(texts.flatMap((text) => spansOf(text)));
    const total = texts.reduce((n, t) => n + bytes(t), 0) + (exact || !texts.length ? 0 : BRANCH_FRAME_BYTES);
    const one = { total, fresh: total, kept: distinct.size };
    return reply(Object.fromEntries(CONFIGS.map((c) => [c, one])), { collapsed: {}, directives: distinct.size, exact });
}

async function measure(request) {
    const missing = request.ids.find((id) => !store.has(id));
    if (missing !== undefined) {
        throw new Error(`entry ${missing} never arrived whole (its line changed while it was read)`);
    }
    if (request.call === "branch_summary") {
        return measureBranch(request);
    }
    const messages = contextOf(request);
    if (request.lane === "summary") {
        const result = measureSummary(messages, request);
        result.context = { in: textBytes(messages), out: textBytes(withExtension(messages)) };
        return result;
    }
    if (request.lane === "delta" && deltaMissing !== null) {
        throw new Error(`a delta call cannot be measured: senpi's delta serialiser did not import (${deltaMissing})`);
    }
    const names = customToolNames(request.tools);
    const sentCount = sentOf(messages).length;
    const result = request.lane === "context" ? measureContext(messages, request)
        : request.lane === "delta" && fns.delta ? measureDelta(messages, request, names) : measureFull(messages, request, names);
    // (what the extension's own entry for the call says it saw and sent: the text of every message)
    result.context = { in: textBytes(messages), out: textBytes(withExtension(messages)) };
    previousSent = sentCount;
    const keep = new Set(request.ids);
    for (const id of store.keys()) {
        if (!keep.has(id)) {
            store.delete(id);
        }
    }
    return result;
}

process.stdout.write(TAG + JSON.stringify({ ready: true, node: process.version, exact: session !== null, fallback, settingsPrint }) + "\n");
let out = [];
for (let next = await lines.next(); !next.done; next = await lines.next()) {
    if (!next.value.trim()) {
        continue;
    }
    let request;
    try {
        request = JSON.parse(next.value);
    }
    catch {
        continue; // a stored entry that changed while it was read: the measure that needs it says so
    }
    if (request.op === "put") {
        const message = request.message ?? request.entry?.message;
        store.set(request.id, session ? { entry: request.entry } : { message, spans: messageSpans(message) });
    }
    else if (request.op === "reset") {
        store.clear();
        previous = fresh();
        previousContext = fresh();
        seenIn = Object.fromEntries(CONFIGS.map((c) => [c, new Map()]));
        previousSent = 0;
    }
    else if (request.op === "flush") {
        out.push(TAG + "{}");
        process.stdout.write(out.join("\n") + "\n");
        out = [];
    }
    else if (request.op === "measure") {
        let reply;
        try {
            reply = await measure(request);
        }
        catch (error) {
            reply = { error: String(error && error.message ? error.message : error).slice(0, 300) };
        }
        out.push(TAG + JSON.stringify(reply));
        if (out.length >= 32) {
            process.stdout.write(out.join("\n") + "\n");
            out = [];
        }
    }
}
if (out.length) {
    process.stdout.write(out.join("\n") + "\n");
}
