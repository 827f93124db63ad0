// senpi-guard's replay harness: imports the original and the patched module side by side, runs
// contexts through both and runs the patch's named checks (its checks.mjs) over the results.
// stdin is one JSON job; stdout gets one JSON report. (audit has its own server: js/audit.mjs.)
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8") || "{}");

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

// Content-block helpers, handed to the patch's checks so that they share one meaning of "text".
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

function callPrompt(fn, context) {
    const input = structuredClone(context);
    return job.call === "messages" ? fn(input.messages) : fn(input);
}

function pipelineOf(fns, up) {
    const run = (context) => {
        const original = util.blocksOf(callPrompt(fns.original, context));
        const candidate = fns.candidate ? util.blocksOf(callPrompt(fns.candidate, context)) : original;
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

function record(results, fixture, name, ok, detail) {
    results.push({ fixture, check: name, ok: Boolean(ok), detail: ok ? "" : String(detail ?? "") });
}

function verifyFixture(patch, pipeline, fixture, results, stats) {
    const { original, candidate } = pipeline.run(fixture.context);
    const shapeOk = original !== null && candidate !== null && original.every((b) => b && typeof b.type === "string")
        && candidate.every((b) => b && typeof b.type === "string");
    record(results, fixture.name, "returns-blocks", shapeOk, "the function did not return an array of content blocks");
    if (!shapeOk) {
        return;
    }
    const run = patch.prepare({ job, util, pipeline, fixture, original, candidate, wanted: new Set(fixture.checks) });
    for (const [name, check] of Object.entries(patch.checks)) {
        if (check.when ? check.when(run) : run.wanted.has(name)) {
            const [ok, detail] = check.run(run);
            record(results, fixture.name, name, ok, detail);
        }
    }
    Object.assign(stats, patch.stats(run));
}

// The restart binding's target: its hashes of a stored branch, before and after the extension
// published its rewrite (the patch's bindingChecks judge them).
async function replayBinding(patch, results) {
    const spec = job.binding;
    const original = await load(spec.original, spec.export);
    const candidate = await load(spec.candidate ?? spec.original, spec.export);
    const key = Symbol.for("senpi-guard.extension.as-sent");
    delete globalThis[key];
    const alone = spec.fixtures.map((fixture) => candidate(structuredClone(fixture.context.messages)));
    const extension = await import(pathToFileURL(spec.extension).href);
    const handlers = [];
    extension.default({ on: (event, handler) => event === "context" && handlers.push(handler) });
    spec.fixtures.forEach((fixture, index) => {
        const branch = structuredClone(fixture.context.messages);
        const before = JSON.stringify(branch);
        let withExtension;
        try {
            withExtension = candidate(branch);
        }
        catch (error) {
            record(results, fixture.name, "binding-runs", false, `threw ${error}`);
            return;
        }
        const run = { job, fixture, original, handler: handlers[0], alone: alone[index], withExtension,
            mutated: JSON.stringify(branch) !== before };
        for (const [name, check] of Object.entries(patch.bindingChecks ?? {})) {
            const [ok, detail] = check.run(run);
            record(results, fixture.name, name, ok, detail);
        }
    });
    delete globalThis[key];
}

async function main() {
    const patch = await import(pathToFileURL(job.checks).href);
    const fns = {
        original: await load(job.prompt.original, job.prompt.export),
        candidate: await load(job.prompt.candidate, job.prompt.export),
    };
    const up = job.upstream ? {
        original: await load(job.upstream.original, job.upstream.export),
        candidate: await load(job.upstream.candidate, job.upstream.export),
    } : null;
    const pipeline = pipelineOf(fns, up);
    const results = [];
    const stats = {};
    for (const fixture of job.fixtures) {
        stats[fixture.name] = {};
        try {
            verifyFixture(patch, pipeline, fixture, results, stats[fixture.name]);
        }
        catch (error) {
            record(results, fixture.name, "runs", false, `threw ${error && error.stack ? error.stack.split("\n").slice(0, 2).join(" ") : error}`);
        }
    }
    if (job.binding) {
        await replayBinding(patch, results);
    }
    return { node: process.version, results, stats };
}

try {
    process.stdout.write(JSON.stringify(await main()));
}
catch (error) {
    process.stdout.write(JSON.stringify({ error: String(error && error.message ? error.message : error) }));
    process.exitCode = 3;
}
