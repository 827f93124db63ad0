// senpi-guard's replay harness: imports the original and the patched module side by side, runs
// contexts through both and checks named properties. The first stdin line is a JSON job; a "verify"
// job gets one JSON report on stdout. A "serve" job then reads one request per line
// ({"op":"put","id","message"} or {"op":"measure","ids","head"}) and answers each "measure" with
// one line; messages off the measured path are dropped, so memory follows the context, not the
// session. The checks here do not reuse the payload's code.
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity })[Symbol.asyncIterator]();
const job = JSON.parse((await lines.next()).value ?? "{}");
const tags = job.tags;
const markerOf = (tag) => job.marker.split("{tag}").join(tag);
const MARKERS = tags.map((tag) => [tag, markerOf(tag)]);

async function load(path, name) {
    if (!path) {
        return null;
    }
    const mod = await import(pathToFileURL(path).href);
    if (typeof mod[name] !== "function") {
        throw new Error(`${path} does not export a function ${name}`);
    }
    return mod[name];
}

function callPrompt(fn, context) {
    const input = structuredClone(context);
    return job.call === "messages" ? fn(input.messages) : fn(input);
}

function blocksOf(result) {
    if (Array.isArray(result)) {
        return result;
    }
    return result !== null && typeof result === "object" && Array.isArray(result.blocks) ? result.blocks : null;
}

function joined(blocks) {
    return blocks.map((b) => (b !== null && typeof b === "object" && b.type === "text" && typeof b.text === "string"
        ? b.text : "\u0000" + JSON.stringify(b) + "\u0000")).join("\u0001");
}

function textBytes(blocks) {
    let total = 0;
    for (const b of blocks) {
        if (b !== null && typeof b === "object" && b.type === "text" && typeof b.text === "string") {
            total += Buffer.byteLength(b.text, "utf8");
        }
    }
    return total;
}

// Outermost <tag>…</tag> spans of one text, found by a plain regular expression per tag.
function spansOf(text, outermostOnly) {
    const spans = [];
    for (const tag of tags) {
        const re = new RegExp(`<${tag}>[\\s\\S]*?</${tag}>`, "g");
        for (const m of text.matchAll(re)) {
            spans.push({ tag, start: m.index, end: m.index + m[0].length, text: m[0] });
        }
    }
    if (!outermostOnly) {
        return spans;
    }
    spans.sort((a, b) => a.start - b.start || b.end - a.end);
    const outer = [];
    let reach = -1;
    for (const s of spans) {
        if (s.start >= reach) {
            outer.push(s);
            reach = s.end;
        }
    }
    return outer;
}

function textsOf(blocks) {
    return blocks.filter((b) => b && b.type === "text" && typeof b.text === "string").map((b) => b.text);
}

function countSpans(texts, outermostOnly) {
    const counts = new Map();
    for (const text of texts) {
        for (const s of spansOf(text, outermostOnly)) {
            counts.set(s.text, (counts.get(s.text) ?? 0) + 1);
        }
    }
    return counts;
}

function contextTexts(context) {
    const texts = [];
    for (const message of context.messages) {
        const parts = typeof message.content === "string" ? [{ type: "text", text: message.content }] : message.content ?? [];
        for (const part of parts) {
            if (part && part.type === "text" && typeof part.text === "string") {
                texts.push(part.text);
            }
        }
    }
    return texts;
}

function countMarkers(text) {
    const counts = {};
    for (const [tag, marker] of MARKERS) {
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

// Walk original and patched text together: they may differ only where the patched text has a tag's
// marker and the original has a span of that tag whose exact text occurred earlier.
function align(orig, cand) {
    const repls = [];
    let i = 0;
    let j = 0;
    for (;;) {
        while (i < orig.length && j < cand.length && orig.charCodeAt(i) === cand.charCodeAt(j)) {
            i++;
            j++;
        }
        if (i === orig.length && j === cand.length) {
            return { ok: true, repls };
        }
        const hit = MARKERS.find(([tag, marker]) => cand.startsWith(marker, j) && orig.startsWith(`<${tag}>`, i));
        if (!hit) {
            return { ok: false, repls, detail: `texts differ at byte ${i} with no marker there: ${JSON.stringify(orig.slice(i, i + 40))} vs ${JSON.stringify(cand.slice(j, j + 40))}` };
        }
        const close = `</${hit[0]}>`;
        const end = orig.indexOf(close, i);
        if (end === -1) {
            return { ok: false, repls, detail: `a marker replaced an unclosed <${hit[0]}> at byte ${i}` };
        }
        const span = orig.slice(i, end + close.length);
        if (orig.indexOf(span) >= i) {
            return { ok: false, repls, detail: `the first copy of a <${hit[0]}> span (byte ${i}) was replaced` };
        }
        repls.push([i, end + close.length, j, j + hit[1].length]);
        i = end + close.length;
        j += hit[1].length;
    }
}

function mapPosition(repls, p) {
    let delta = 0;
    for (const [os, oe, cs, ce] of repls) {
        if (oe <= p) {
            delta += (ce - cs) - (oe - os);
        }
        else if (os < p) {
            return cs;
        }
        else {
            break;
        }
    }
    return p + delta;
}

function commonPrefix(a, b) {
    const n = Math.min(a.length, b.length);
    let i = 0;
    while (i < n && a.charCodeAt(i) === b.charCodeAt(i)) {
        i++;
    }
    return i;
}

function run(fns, context) {
    const original = blocksOf(callPrompt(fns.original, context));
    const candidate = fns.candidate ? blocksOf(callPrompt(fns.candidate, context)) : original;
    return { original, candidate };
}

function applyUpstream(fn, blocks) {
    if (!fn || blocks === null) {
        return { blocks, collapsed: undefined };
    }
    const result = fn(structuredClone(blocks));
    return { blocks: blocksOf(result), collapsed: result && !Array.isArray(result) ? result.collapsedDirectives : undefined };
}

function check(results, fixture, name, ok, detail) {
    results.push({ fixture, check: name, ok: Boolean(ok), detail: ok ? "" : String(detail ?? "") });
}

function verifyFixture(fns, up, fixture, results, stats) {
    const name = fixture.name;
    const { original, candidate } = run(fns, fixture.context);
    const shapeOk = original !== null && candidate !== null && original.every((b) => b && typeof b.type === "string")
        && candidate.every((b) => b && typeof b.type === "string");
    check(results, name, "returns-blocks", shapeOk, "the function did not return an array of content blocks");
    if (!shapeOk) {
        return;
    }
    const orig = joined(original);
    const cand = joined(candidate);
    const inputCounts = countSpans(contextTexts(fixture.context), false);
    const outputCounts = countSpans(textsOf(original), false);
    const lost = [...inputCounts].filter(([span, n]) => (outputCounts.get(span) ?? 0) < n);
    check(results, name, "original-keeps-every-copy", lost.length === 0,
        `the unpatched module already drops ${lost.length} directive copies (a leftover hand-applied dedupe?)`);
    const distinct = new Set(countSpans(textsOf(original), false).keys());
    const wanted = new Set(fixture.checks);
    const aligned = align(orig, cand);
    if (wanted.has("identical")) {
        check(results, name, "identical", JSON.stringify(original) === JSON.stringify(candidate),
            aligned.ok ? `${aligned.repls.length} spans were replaced` : aligned.detail);
    }
    if (wanted.has("only-repeats-replaced")) {
        check(results, name, "only-repeats-replaced", aligned.ok, aligned.detail);
    }
    if (wanted.has("every-directive-survives")) {
        const missing = [...distinct].filter((span) => !cand.includes(span));
        check(results, name, "every-directive-survives", missing.length === 0,
            `${missing.length} of ${distinct.size} distinct directives lost`);
    }
    if (wanted.has("one-copy-per-directive")) {
        const counts = countSpans(textsOf(candidate), true);
        const extra = [...counts].filter(([, n]) => n !== 1);
        check(results, name, "one-copy-per-directive", extra.length === 0,
            `${extra.length} directives appear more than once (e.g. ${extra[0]?.[1]} copies of a ${extra[0]?.[0].length}-byte span)`);
    }
    if (wanted.has("markers-well-formed")) {
        const bad = MARKERS.filter(([, m]) => Buffer.byteLength(m) > job.maxMarkerBytes || tags.some((t) => m.includes(`<${t}>`)));
        check(results, name, "markers-well-formed", bad.length === 0, `marker for ${bad[0]?.[0]} is too long or holds an opening tag`);
    }
    if (wanted.has("prefix-stable") && fixture.growing) {
        const n = fixture.context.messages.length;
        const full = { orig, cand, repls: aligned.repls };
        const views = [];
        let stable = 0;
        let firstBad = null;
        for (let k = 1; k <= n; k++) {
            const part = run(fns, { ...fixture.context, messages: fixture.context.messages.slice(0, k) });
            const po = joined(part.original);
            const pc = joined(part.candidate);
            const a = align(po, pc);
            views.push({ orig: po, cand: pc, repls: a.repls });
        }
        for (let k = 0; k < views.length; k++) {
            const pairs = [[views[k], full]];
            if (k + 1 < views.length) {
                pairs.push([views[k], views[k + 1]]);
            }
            let ok = true;
            for (const [small, big] of pairs) {
                const p = commonPrefix(small.orig, big.orig);
                const a = small.cand.slice(0, mapPosition(small.repls, p));
                const b = big.cand.slice(0, mapPosition(big.repls, p));
                if (!(a.startsWith(b) || b.startsWith(a))) {
                    ok = false;
                }
            }
            stable += ok ? 1 : 0;
            if (!ok && firstBad === null) {
                firstBad = k + 1;
            }
        }
        check(results, name, "prefix-stable", firstBad === null,
            `${views.length - stable} of ${views.length} prefixes are not stable (first: ${firstBad} messages)`);
        stats.prefixes = { stable, total: views.length };
    }
    const markers = countMarkers(cand);
    Object.assign(stats, {
        originalBytes: textBytes(original),
        patchedBytes: textBytes(candidate),
        collapsed: markers,
        distinctDirectives: distinct.size,
    });
    if (up) {
        const before = applyUpstream(up.original, original);
        const after = applyUpstream(up.candidate ?? up.original, candidate);
        const finalText = after.blocks ? joined(after.blocks) : "";
        const missing = [...distinct].filter((span) => !finalText.includes(span));
        const untouched = JSON.stringify(after.blocks) === JSON.stringify(candidate);
        const total = Object.values(markers).reduce((x, y) => x + y, 0);
        const counted = typeof after.collapsed === "number" ? after.collapsed === total
            : Array.isArray(after.collapsed) ? after.collapsed.length === total : true;
        check(results, name, "upstream-keeps-directives", missing.length === 0 && untouched && counted,
            missing.length ? `upstream's dedupe after ours loses ${missing.length} of ${distinct.size} distinct directives`
                : !untouched ? "upstream's dedupe changed our output" : `collapsedDirectives says ${after.collapsed}, we collapsed ${total}`);
        const upstreamText = before.blocks ? joined(before.blocks) : "";
        stats.upstreamOnly = {
            bytes: before.blocks ? textBytes(before.blocks) : null,
            surviving: [...distinct].filter((span) => upstreamText.includes(span)).length,
        };
        stats.pipelineBytes = after.blocks ? textBytes(after.blocks) : null;
    }
}

function measure(fns, up, context) {
    const { original, candidate } = run(fns, context);
    const before = up ? applyUpstream(up.original, original).blocks : original;
    const after = up ? applyUpstream(up.candidate ?? up.original, candidate).blocks : candidate;
    const distinct = [...countSpans(contextTexts(context), false).keys()];
    const beforeText = joined(before);
    const afterText = joined(after);
    return {
        originalBytes: textBytes(before),
        patchedBytes: textBytes(after),
        collapsed: countMarkers(afterText),
        directives: distinct.length,
        keptUnpatched: distinct.filter((span) => beforeText.includes(span)).length,
        keptPatched: distinct.filter((span) => afterText.includes(span)).length,
    };
}

async function main() {
    const fns = {
        original: await load(job.prompt.original, job.prompt.export),
        candidate: await load(job.prompt.candidate, job.prompt.export),
    };
    const up = job.upstream ? {
        original: await load(job.upstream.original, job.upstream.export),
        candidate: await load(job.upstream.candidate, job.upstream.export),
    } : null;
    if (job.mode === "serve") {
        await serve(fns, up);
        return null;
    }
    const results = [];
    const stats = {};
    for (const fixture of job.fixtures) {
        stats[fixture.name] = {};
        try {
            verifyFixture(fns, up, fixture, results, stats[fixture.name]);
        }
        catch (error) {
            check(results, fixture.name, "runs", false, `threw ${error && error.stack ? error.stack.split("\n").slice(0, 2).join(" ") : error}`);
        }
    }
    return { node: process.version, results, stats };
}

async function serve(fns, up) {
    const messages = new Map();
    process.stdout.write(JSON.stringify({ ready: true, node: process.version }) + "\n");
    for (let next = await lines.next(); !next.done; next = await lines.next()) {
        if (!next.value.trim()) {
            continue;
        }
        const request = JSON.parse(next.value);
        if (request.op === "put") {
            messages.set(request.id, request.message);
            continue;
        }
        let reply;
        try {
            const context = { messages: [...(request.head ?? []), ...request.ids.map((id) => messages.get(id))] };
            reply = measure(fns, up, context);
        }
        catch (error) {
            reply = { error: String(error && error.message ? error.message : error) };
        }
        const keep = new Set(request.ids);
        for (const id of messages.keys()) {
            if (!keep.has(id)) {
                messages.delete(id);
            }
        }
        process.stdout.write(JSON.stringify(reply) + "\n");
    }
}

try {
    const report = await main();
    if (report !== null) {
        process.stdout.write(JSON.stringify(report));
    }
}
catch (error) {
    process.stdout.write(JSON.stringify({ error: String(error && error.message ? error.message : error) }));
    process.exitCode = 3;
}
