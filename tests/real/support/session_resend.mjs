// What a full re-send of a stored session serialises to, with the installed senpi's own code: its
// session manager builds the context, convertToLlm turns it into provider messages, prompt-bridge's
// buildPromptBlocks serialises them and upstream's dedupe runs on the result (as stream.js calls them).
// argv: the package dir, the session file; stdout: JSON {texts} of the blocks sent.
// (This project's own code; it does not use senpi-guard's harness or checks.)
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const [pkg, session] = process.argv.slice(2);
const dist = (file) => import(pathToFileURL(join(pkg, "dist", file)).href);
const sessions = await dist("core/session-manager.js");
const { convertToLlm } = await dist("core/messages.js");
const bridge = await dist("core/extensions/builtin/claude-sdk-oauth/prompt-bridge.js");
const upstream = await dist("core/extensions/builtin/claude-sdk-oauth/prompt-directive-dedupe.js");

const { messages } = sessions.buildSessionContext(sessions.loadEntriesFromFile(session));
let blocks = bridge.buildPromptBlocks({ messages: convertToLlm(messages) }, new Map());
const result = upstream.dedupeUltraworkBlocks(blocks);
blocks = Array.isArray(result) ? result : result.blocks;
process.stdout.write(JSON.stringify({ texts: blocks.filter((b) => b && b.type === "text").map((b) => b.text) }));
