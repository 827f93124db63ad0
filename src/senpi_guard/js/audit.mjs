// senpi-guard's audit server. The first stdin line is a JSON job naming the modules to import: the
// prompt serialiser (unpatched and patched), upstream's dedupe when present, the delta serialiser,
// and senpi's own session functions when they import. Then one request per line:
//   {"op":"reset"}                                   a new session starts
//   {"op":"put","id","message"|"entry"}              a context message (or raw session entry)
//   {"op":"measure","ids","leaf","lane","delta","tools"}
// Each "measure" gets one reply line, in order; Python may send many before reading. Only the
// messages of the measured context are kept, so memory follows the context, not the file.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
const job = JSON.parse((await lines.next()).value ?? "{}");

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
const textOf = (blocks) => blocks.filter(isText).map((b) => b.text).join("");
const bytes = (text) => Buffer.byteLength(text, "utf8");

function spansOf(text) {
    const found = [];
    for (const tag of job.tags) {
        const open = `<${tag}>`;
        const close = `</${tag}>`;
        for (let at = text.indexOf(open); at !== -1; at = text.indexOf(open, at + 1)) {
            const end = text.indexOf(close, at);
            if (end === -1) {
                break;
            }
            found.push(text.slice(at, end + close.length));
            at = end + close.length - 1;
        }
    }
    return found;
}

function messageSpans(message) {
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

function countMarkers(text) {
    const counts = {};
    for (const tag of job.tags) {
        const marker = job.marker.split("{tag}").join(tag);
        let n = 0;
        for (let at = text.indexOf(marker); at !== -1; at = text.indexOf(marker, at + marker.length)) {
            n++;
        }
        if (n) {
            counts[tag] = n;
        }
    }
    return counts;
}

function commonPrefix(a, b) {
    const n = Math.min(a.length, b.length);
    let i = 0;
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

const fns = {
    original: await load(job.prompt),
    candidate: (await load(job.prompt, "candidate")) ?? (await load(job.prompt)),
    upOriginal: await load(job.upstream),
    upCandidate: (await load(job.upstream, "candidate")) ?? (await load(job.upstream)),
    delta: await load(job.delta),
};
let session = null;
if (job.session) {
    try {
        session = { build: await load(job.session.context), convert: await load(job.session.convert) };
    }
    catch (error) {
        session = null;
        process.stderr.write(`senpi's own session functions did not import: ${error?.message ?? error}\n`);
    }
}

const store = new Map(); // id -> {message | entry, spans}
let previous = null; // the previous full re-send's texts: {original, patched}
let previousSent = 0;

function contextOf(request) {
    if (session) {
        const entries = request.ids.map((id) => store.get(id).entry);
        const byId = new Map(entries.map((e) => [e.id, e]));
        return session.convert(session.build(entries, request.leaf, byId).messages);
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

function measureFull(messages, request, names) {
    const context = { messages };
    const original = runUpstream(fns.upOriginal, blocksOf(fns.original({ messages: [...messages] }, names)));
    const patched = runUpstream(fns.upCandidate, blocksOf(fns.candidate({ messages: [...messages] }, names)));
    const originalText = textOf(original);
    const patchedText = textOf(patched);
    const distinct = spansOfContext(context.messages, request);
    const kept = (text) => [...distinct].filter((span) => text.includes(span)).length;
    const cacheWrite = (now, before) => bytes(before === null ? now : now.slice(commonPrefix(now, before)));
    const reply = {
        originalBytes: bytes(originalText), patchedBytes: bytes(patchedText),
        cacheWriteOriginal: cacheWrite(originalText, previous && previous.original),
        cacheWritePatched: cacheWrite(patchedText, previous && previous.patched),
        collapsed: countMarkers(patchedText), directives: distinct.size,
        keptUnpatched: kept(originalText), keptPatched: kept(patchedText),
    };
    previous = { original: originalText, patched: patchedText };
    return reply;
}

// What the resident lane counts as sent: user and tool-result messages, minus literally empty users.
const sentOf = (messages) => messages.filter((m) => m.role === "toolResult" || (m.role === "user" && !(Array.isArray(m.content) && m.content.length === 0)));

function measureDelta(messages, request, names) {
    const sent = sentOf(messages);
    const count = Number.isInteger(request.delta) ? request.delta : Math.max(sent.length - previousSent, 0);
    const fresh = count > 0 ? sent.slice(-count) : [];
    const text = textOf(fns.delta(fresh, names));
    const distinct = new Set();
    for (const message of fresh) {
        for (const span of messageSpans(message)) {
            distinct.add(span);
        }
    }
    return { originalBytes: bytes(text), patchedBytes: bytes(text), collapsed: {}, directives: distinct.size,
        keptUnpatched: distinct.size, keptPatched: distinct.size, deltaMessages: fresh.length };
}

function measure(request) {
    const messages = contextOf(request);
    const names = customToolNames(request.tools);
    const sentCount = sentOf(messages).length;
    const reply = request.lane === "delta" && fns.delta ? measureDelta(messages, request, names) : measureFull(messages, request, names);
    previousSent = sentCount;
    const keep = new Set(request.ids);
    for (const id of store.keys()) {
        if (!keep.has(id)) {
            store.delete(id);
        }
    }
    return reply;
}

process.stdout.write(JSON.stringify({ ready: true, node: process.version, exact: session !== null }) + "\n");
let out = [];
for (let next = await lines.next(); !next.done; next = await lines.next()) {
    if (!next.value.trim()) {
        continue;
    }
    const request = JSON.parse(next.value);
    if (request.op === "put") {
        store.set(request.id, session ? { entry: request.entry } : { message: request.message, spans: messageSpans(request.message) });
    }
    else if (request.op === "reset") {
        store.clear();
        previous = null;
        previousSent = 0;
    }
    else if (request.op === "flush") {
        out.push("{}");
        process.stdout.write(out.join("\n") + "\n");
        out = [];
    }
    else if (request.op === "measure") {
        let reply;
        try {
            reply = measure(request);
        }
        catch (error) {
            reply = { error: String(error && error.message ? error.message : error).slice(0, 300) };
        }
        out.push(JSON.stringify(reply));
        if (out.length >= 32) {
            process.stdout.write(out.join("\n") + "\n");
            out = [];
        }
    }
}
if (out.length) {
    process.stdout.write(out.join("\n") + "\n");
}
