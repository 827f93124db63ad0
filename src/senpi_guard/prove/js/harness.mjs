// senpi-guard's replay harness: imports every module of the job (by role: the original and the
// patched bytes side by side) and hands them to the patch's own replay (its checks.mjs exports
// `replay`), which runs the fixtures and its named checks. stdin is one JSON job; stdout gets one JSON
// report {node, results: [{fixture, check, ok, detail}], stats}. Nothing here knows a patch.
import { pathToFileURL } from "node:url";
import { job, report } from "./protocol.mjs";

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

// A module that does not import (a dependency missing from a dist-only build) is reported, and
// the patch decides what that means (a target proven by syntax alone, or a failure).
async function loadModules() {
    const modules = {};
    for (const [role, spec] of Object.entries(job.modules ?? {})) {
        if (!spec) {
            continue;
        }
        try {
            modules[role] = { original: await load(spec.original, spec.export),
                candidate: spec.candidate ? await load(spec.candidate, spec.export) : null, spec };
        }
        catch (error) {
            modules[role] = { error: String(error && error.message ? error.message : error).split("\n")[0], spec };
        }
    }
    return modules;
}

async function main() {
    const patch = await import(pathToFileURL(job.checks).href);
    const results = [];
    const stats = {};
    const record = (fixture, check, ok, detail) => results.push({ fixture, check, ok: Boolean(ok),
        detail: ok ? "" : String(detail ?? "") });
    await patch.replay({ job, modules: await loadModules(), record, stats });
    return { node: process.version, results, stats };
}

await report(main);
