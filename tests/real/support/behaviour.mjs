// An independent look at a real senpi's prompt serialiser, as senpi itself calls it: imports the
// installed prompt-bridge.js (and upstream's prompt-directive-dedupe.js when there is one) straight
// from the package and serialises each growing context the way a full re-send does. stdin: JSON
// {bridge, upstream, contexts}; stdout: one JSON line per context with the texts that were sent.
// (This project's own code; it does not use senpi-guard's harness or checks.)
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const job = JSON.parse(readFileSync(0, "utf8"));
const bridge = await import(pathToFileURL(job.bridge).href);
const upstream = job.upstream ? await import(pathToFileURL(job.upstream).href) : null;
for (const context of job.contexts) {
    let blocks = bridge.buildPromptBlocks(structuredClone(context), new Map());
    if (upstream) {
        const result = upstream.dedupeUltraworkBlocks(blocks);
        blocks = Array.isArray(result) ? result : result.blocks;
    }
    const texts = blocks.filter((b) => b && b.type === "text").map((b) => b.text);
    process.stdout.write(JSON.stringify({ texts }) + "\n");
}
