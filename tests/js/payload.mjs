// Runs a rendered payload (the code senpi-guard injects) directly, for property tests and the
// benchmark. argv[2] is a file holding the payload. Serves one JSON request per stdin line:
// {"cases": [blocks, …]} -> {"outputs": [blocks, …]} (inputs are deep-frozen: mutation throws).
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";

const source = readFileSync(process.argv[2], "utf8");
const api = new Function(`${source}\nreturn { dedupe: __senpiGuardDedupe };`)();

function freeze(value) {
    if (value !== null && typeof value === "object") {
        Object.freeze(value);
        for (const key of Object.keys(value)) {
            freeze(value[key]);
        }
    }
    return value;
}

const lines = createInterface({ input: process.stdin, crlfDelay: Infinity });
for await (const line of lines) {
    if (!line.trim()) {
        continue;
    }
    let reply;
    try {
        const request = JSON.parse(line);
        const cases = request.cases.map(freeze);
        const started = process.hrtime.bigint();
        const outputs = cases.map((blocks) => api.dedupe(blocks));
        reply = { outputs, elapsedMs: Number(process.hrtime.bigint() - started) / 1e6 };
    }
    catch (error) {
        reply = { error: String(error && error.stack ? error.stack : error) };
    }
    process.stdout.write(JSON.stringify(reply) + "\n");
}
