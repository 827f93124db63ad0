import { pathToFileURL } from "node:url";
import { resendSession } from "./resend.mjs";
import { align, commonPrefix, contextTexts, countMarkers, countSpans, mapPosition, markersOf } from "./spans.mjs";

export { spansOf } from "./spans.mjs"; // (the extension's checks import it from here)

// The directive-dedupe patch's named checks, run by senpi-guard's harness after replaying each
// fixture through the original and the patched module. Each check returns [ok, detail]; `when`
// says whether it applies (default: the fixture lists it). These checks do not reuse the
// payload's code: spans are found here by a plain scan per tag (what a lazy regex would match).

// What every check below looks at, computed once per fixture.
export function prepare(run) {
    const { job, util, original, candidate } = run;
    const markers = markersOf(job, util.textsOf(original));
    const orig = util.joined(original);
    const cand = util.joined(candidate);
    return {
        ...run, markers, orig, cand,
        aligned: align(markers, orig, cand),
        distinct: new Set(countSpans(job.tags, util.textsOf(original), false).keys()),
    };
}

// Each prefix of a growing session, patched, must be a prefix of the next and of the whole,
// up to the markers (compared through the alignment with the unpatched text).
function prefixStable(r) {
    const n = r.fixture.context.messages.length;
    const views = [];
    for (let k = 1; k <= n; k++) {
        const part = r.pipeline.run({ ...r.fixture.context, messages: r.fixture.context.messages.slice(0, k) });
        const orig = r.util.joined(part.original);
        const cand = r.util.joined(part.candidate);
        views.push({ orig, cand, repls: align(r.markers, orig, cand).repls });
    }
    const full = { orig: r.orig, cand: r.cand, repls: r.aligned.repls };
    let stable = 0;
    let firstBad = null;
    for (let k = 0; k < views.length; k++) {
        const pairs = k + 1 < views.length ? [[views[k], full], [views[k], views[k + 1]]] : [[views[k], full]];
        const ok = pairs.every(([small, big]) => {
            const p = commonPrefix(small.orig, big.orig);
            const a = small.cand.slice(0, mapPosition(small.repls, p));
            const b = big.cand.slice(0, mapPosition(big.repls, p));
            return a.startsWith(b) || b.startsWith(a);
        });
        stable += ok ? 1 : 0;
        firstBad = !ok && firstBad === null ? k + 1 : firstBad;
    }
    r.prefixes = { stable, total: views.length };
    return [firstBad === null, `${views.length - stable} of ${views.length} prefixes are not stable (first: ${firstBad} messages)`];
}

function upstreamKeepsDirectives(r) {
    const after = r.pipeline.upstream.candidate(r.candidate);
    const finalText = after.blocks ? r.util.joined(after.blocks) : "";
    const missing = [...r.distinct].filter((span) => !finalText.includes(span));
    const untouched = JSON.stringify(after.blocks) === JSON.stringify(r.candidate);
    const total = Object.values(countMarkers(r.markers, r.cand)).reduce((x, y) => x + y, 0);
    const counted = typeof after.collapsed === "number" ? after.collapsed === total
        : Array.isArray(after.collapsed) ? after.collapsed.length === total : true;
    return [missing.length === 0 && untouched && counted,
        missing.length ? `upstream's dedupe after ours loses ${missing.length} of ${r.distinct.size} distinct directives`
            : !untouched ? "upstream's dedupe changed our output" : `collapsedDirectives says ${after.collapsed}, we collapsed ${total}`];
}

export const checks = {
    "original-keeps-every-copy": {
        when: () => true,
        run(r) {
            const input = countSpans(r.job.tags, contextTexts(r.fixture.context), false);
            const output = countSpans(r.job.tags, r.util.textsOf(r.original), false);
            const lost = [...input].filter(([span, n]) => (output.get(span) ?? 0) < n);
            return [lost.length === 0, `the unpatched module already drops ${lost.length} directive copies (a leftover hand-applied dedupe?)`];
        },
    },
    identical: {
        run: (r) => [JSON.stringify(r.original) === JSON.stringify(r.candidate),
            r.aligned.ok ? `${r.aligned.repls.length} spans were replaced` : r.aligned.detail],
    },
    "only-repeats-replaced": { run: (r) => [r.aligned.ok, r.aligned.detail] },
    "every-directive-survives": {
        run(r) {
            const missing = [...r.distinct].filter((span) => !r.cand.includes(span));
            return [missing.length === 0, `${missing.length} of ${r.distinct.size} distinct directives lost`];
        },
    },
    "one-copy-per-directive": {
        run(r) {
            const counts = countSpans(r.job.tags, r.util.textsOf(r.candidate), true);
            const markerLength = new Map(r.markers.map(([tag, m]) => [tag, m.length]));
            // a span no longer than its marker is never replaced: replacing it would not save
            const worthIt = (span) => span.length > markerLength.get(span.slice(1, span.indexOf(">")));
            const extra = [...counts].filter(([span, n]) => n !== 1 && worthIt(span));
            return [extra.length === 0, `${extra.length} directives appear more than once (e.g. ${extra[0]?.[1]} copies of a ${extra[0]?.[0].length}-byte span)`];
        },
    },
    "markers-well-formed": {
        run(r) {
            const bad = r.markers.filter(([, m]) => Buffer.byteLength(m) > r.job.maxMarkerBytes || r.job.tags.some((t) => m.includes(`<${t}>`)));
            return [bad.length === 0, `marker for ${bad[0]?.[0]} is too long or holds an opening tag`];
        },
    },
    "prefix-stable": { when: (r) => r.wanted.has("prefix-stable") && r.fixture.growing, run: prefixStable },
    "upstream-keeps-directives": { when: (r) => r.pipeline.upstream !== null, run: upstreamKeepsDirectives },
};

export function stats(r) {
    const out = {
        originalBytes: r.util.textBytes(r.original),
        patchedBytes: r.util.textBytes(r.candidate),
        collapsed: countMarkers(r.markers, r.cand),
        distinctDirectives: r.distinct.size,
    };
    if (r.prefixes) {
        out.prefixes = r.prefixes;
    }
    if (r.pipeline.upstream) {
        const before = r.pipeline.upstream.original(r.original);
        const after = r.pipeline.upstream.candidate(r.candidate);
        const upstreamText = before.blocks ? r.util.joined(before.blocks) : "";
        out.upstreamOnly = {
            bytes: before.blocks ? r.util.textBytes(before.blocks) : null,
            surviving: [...r.distinct].filter((span) => upstreamText.includes(span)).length,
        };
        out.pipelineBytes = after.blocks ? r.util.textBytes(after.blocks) : null;
        out.resend = resendSession(r);
    }
    // the one line `verify` prints for a headline fixture (what senpi sends as installed -> patched)
    const installed = out.upstreamOnly?.bytes ?? out.originalBytes;
    out.headline = `${installed.toLocaleString("en")} -> ${(out.pipelineBytes ?? out.patchedBytes).toLocaleString("en")} bytes`;
    return out;
}

// ---- senpi's restart binding (sentHashesFromBranch, 2026.8.18-3 and later) -----------------------
// A fixture is a stored branch (session entries). The branch as the extension sends it is built here
// from the extension's own `context` handler, not from the payload, and hashed by senpi's unpatched
// function; the patched function must give exactly that once the extension is loaded, and exactly
// the unpatched hashes before.
function branchAsSent(r) {
    const branch = structuredClone(r.fixture.context.messages);
    const messages = [];
    const where = [];
    branch.forEach((entry, index) => {
        if (entry.type === "message") {
            messages.push(entry.message);
            where.push(index);
        }
        else if (entry.type === "custom_message") {
            messages.push({ role: "custom", customType: entry.customType, content: entry.content, display: entry.display });
            where.push(-1);
        }
    });
    const result = r.handler({ type: "context", messages }, {});
    const sent = result && Array.isArray(result.messages) ? result.messages : messages;
    sent.forEach((message, k) => {
        if (where[k] >= 0) {
            branch[where[k]] = { ...branch[where[k]], message };
        }
    });
    return branch;
}

const sameHashes = (a, b) => JSON.stringify(a) === JSON.stringify(b);

export const bindingChecks = {
    "binding-unchanged-without-extension": {
        run: (r) => [sameHashes(r.alone, r.original(structuredClone(r.fixture.context.messages))),
            "without the extension loaded, the patched binding hashes differ from senpi's own"],
    },
    "binding-hashes-as-sent": {
        run: (r) => [sameHashes(r.withExtension, r.original(branchAsSent(r))),
            "with the extension loaded, the binding does not hash the branch as the extension sends it"],
    },
    "binding-follows-the-rewrite": {
        run(r) {
            const asSent = branchAsSent(r);
            const rewritten = JSON.stringify(asSent) !== JSON.stringify(r.fixture.context.messages);
            if (r.fixture.checks.includes("rewrites") && !rewritten) {
                return [false, "the extension rewrote nothing in a fixture made to be rewritten"];
            }
            const stored = r.original(structuredClone(r.fixture.context.messages));
            return [!rewritten || !sameHashes(r.withExtension, stored) || stored.length === 0,
                "the extension rewrote the branch but the binding still hashes it as stored"];
        },
    },
    "binding-input-not-mutated": { run: (r) => [!r.mutated, "the patched binding changed the branch it was given"] },
};

// ---- the replay the engine's harness hands this patch (by role: prompt, upstream, binding) ------
// Content-block helpers, shared by the checks so that they have one meaning of "text".
const util = {
    blocksOf(result) {
        if (Array.isArray(result)) {
            return result;
        }
        return result !== null && typeof result === "object" && Array.isArray(result.blocks) ? result.blocks : null;
    },
    isText: (b) => b !== null && typeof b === "object" && b.type === "text" && typeof b.text === "string",
    joined(blocks) {
        return blocks.map((b) => (util.isText(b) ? b.text : "\u0000" + JSON.stringify(b) + "\u0000")).join("\u0001");
    },
    textsOf: (blocks) => blocks.filter(util.isText).map((b) => b.text),
    textBytes: (blocks) => blocks.filter(util.isText).reduce((n, b) => n + Buffer.byteLength(b.text, "utf8"), 0),
};

function pipelineOf(job, prompt, up) {
    const call = (fn, context) => {
        const input = structuredClone(context);
        return job.call === "messages" ? fn(input.messages) : fn(input);
    };
    const run = (context) => {
        const original = util.blocksOf(call(prompt.original, context));
        const candidate = prompt.candidate ? util.blocksOf(call(prompt.candidate, context)) : original;
        return { original, candidate };
    };
    // The patched pipeline hands upstream's dedupe the very array the patched prompt returned, as
    // senpi does (so its entry guard is exercised); the unpatched one gets a copy.
    const applyUpstream = (fn, blocks, copy) => {
        if (!fn || blocks === null) {
            return { blocks, collapsed: undefined };
        }
        const result = fn(copy ? structuredClone(blocks) : blocks);
        return { blocks: util.blocksOf(result), collapsed: result && !Array.isArray(result) ? result.collapsedDirectives : undefined };
    };
    return {
        run,
        upstream: up ? {
            original: (blocks) => applyUpstream(up.original, blocks, true),
            candidate: (blocks) => applyUpstream(up.candidate ?? up.original, blocks, false),
        } : null,
    };
}

function replayFixture(ctx, pipeline, fixture) {
    const { original, candidate } = pipeline.run(fixture.context);
    const shapeOk = original !== null && candidate !== null && original.every((b) => b && typeof b.type === "string")
        && candidate.every((b) => b && typeof b.type === "string");
    ctx.record(fixture.name, "returns-blocks", shapeOk, "the function did not return an array of content blocks");
    if (!shapeOk) {
        return;
    }
    const run = prepare({ job: ctx.job, util, pipeline, fixture, original, candidate, wanted: new Set(fixture.checks) });
    for (const [name, check] of Object.entries(checks)) {
        if (check.when ? check.when(run) : run.wanted.has(name)) {
            const [ok, detail] = check.run(run);
            ctx.record(fixture.name, name, ok, detail);
        }
    }
    ctx.stats[fixture.name] = stats(run);
}

// The restart binding's target: its hashes of a stored branch, before and after the extension
// published its rewrite (bindingChecks judge them).
async function replayBinding(ctx, binding) {
    const key = Symbol.for("senpi-guard.extension.as-sent");
    const fixtures = ctx.job.targetFixtures.binding ?? [];
    const candidate = binding.candidate ?? binding.original;
    delete globalThis[key];
    const alone = fixtures.map((fixture) => candidate(structuredClone(fixture.context.messages)));
    const extension = await import(pathToFileURL(ctx.job.extension).href);
    const handlers = [];
    extension.default({ on: (event, handler) => event === "context" && handlers.push(handler) });
    fixtures.forEach((fixture, index) => {
        const branch = structuredClone(fixture.context.messages);
        const before = JSON.stringify(branch);
        let withExtension;
        try {
            withExtension = candidate(branch);
        }
        catch (error) {
            ctx.record(fixture.name, "binding-runs", false, `threw ${error}`);
            return;
        }
        const run = { job: ctx.job, fixture, original: binding.original, handler: handlers[0], alone: alone[index],
            withExtension, mutated: JSON.stringify(branch) !== before };
        for (const [name, check] of Object.entries(bindingChecks)) {
            const [ok, detail] = check.run(run);
            ctx.record(fixture.name, name, ok, detail);
        }
    });
    delete globalThis[key];
}

export async function replay(ctx) {
    const { prompt, upstream, binding } = ctx.modules;
    for (const module of Object.values(ctx.modules)) {
        if (module.error) {
            throw new Error(`${module.spec.original}: ${module.error}`); // (every target of this patch must import)
        }
    }
    const pipeline = pipelineOf(ctx.job, prompt, upstream);
    for (const fixture of ctx.job.fixtures) {
        try {
            replayFixture(ctx, pipeline, fixture);
        }
        catch (error) {
            ctx.record(fixture.name, "runs", false, `threw ${error && error.stack ? error.stack.split("\n").slice(0, 2).join(" ") : error}`);
        }
    }
    if (binding) {
        await replayBinding(ctx, binding);
    }
}
