// Fill in `payloadBytes` on each resident flatten/bootstrap record of a sample session, the way a
// senpi that records it counts: the UTF-8 bytes of the text blocks the call sent, computed with the
// sample package's own session, conversion, prompt and dedupe functions.
// usage: node record_payload.mjs PACKAGE_DIR SESSION.jsonl
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [packageDir, sessionPath] = process.argv.slice(2);
const dist = join(packageDir, "dist", "core");
const providerDir = ["claude-sdk-oauth", "claude-agent-sdk"].map((d) => join(dist, "extensions", "builtin", d)).find(existsSync);
const load = async (file) => import(pathToFileURL(file).href);
const { buildSessionContext } = await load(join(dist, "session-manager.js"));
const { convertToLlm } = await load(join(dist, "messages.js"));
const { buildPromptBlocks } = await load(join(providerDir, "prompt-bridge.js"));
const dedupePath = join(providerDir, "prompt-directive-dedupe.js");
const dedupe = existsSync(dedupePath) ? (await load(dedupePath)).dedupeUltraworkBlocks : null;

const lines = readFileSync(sessionPath, "utf8").split("\n");
const parsed = lines.map((line) => {
    try {
        return line.trim() ? JSON.parse(line) : null;
    }
    catch {
        return null;
    }
});
const tools = new Set();
for (const entry of parsed) {
    const message = entry?.type === "message" ? entry.message : null;
    if (message?.role === "toolResult") {
        tools.add(message.toolName);
    }
    for (const part of Array.isArray(message?.content) ? message.content : []) {
        if (part?.type === "toolCall") {
            tools.add(part.name);
        }
    }
}
const builtIn = new Set(["read", "write", "edit", "bash", "grep", "find", "glob"]);
const customNames = new Map();
for (const name of tools) {
    if (!builtIn.has(name.toLowerCase())) {
        customNames.set(name, `mcp__custom-tools__${name}`);
        customNames.set(name.toLowerCase(), `mcp__custom-tools__${name}`);
    }
}

const entries = [];
const byId = new Map();
parsed.forEach((entry, at) => {
    if (!entry || typeof entry.id !== "string" || entry.type === "session") {
        return;
    }
    const records = (entry.message?.diagnostics ?? []).filter((d) => d.type === "claude_sdk_oauth_session_continuity");
    const record = records[records.length - 1];
    if (record && ["flatten", "bootstrap"].includes(record.details.kind)) {
        const { messages } = buildSessionContext(entries, entry.parentId, byId);
        let blocks = buildPromptBlocks({ messages: convertToLlm(messages) }, customNames);
        blocks = dedupe ? dedupe(blocks).blocks : blocks;
        record.details.payloadBytes = blocks.filter((b) => b.type === "text").reduce((n, b) => n + Buffer.byteLength(b.text, "utf8"), 0);
        lines[at] = JSON.stringify(entry);
    }
    entries.push(entry);
    byId.set(entry.id, entry);
});
writeFileSync(sessionPath, lines.join("\n"));
