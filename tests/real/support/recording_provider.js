// A test provider for the real senpi (this project's own code): registers `rec/rec-1`, records what
// each call receives (the context after every `context` handler) to $SENPI_GUARD_REC_LOG as one JSON
// line, and answers "ok". A provider of this kind has no lanes: every call gets the whole context.
// With $SENPI_GUARD_REC_COUNT set it reports the input it received as a provider without a known
// tokenizer counts it (UTF-8 bytes of the system prompt and the message texts, 4 a token), and logs
// that count and the system prompt's bytes beside the messages.
import { appendFileSync } from "node:fs";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { replyStream } from "./reply_stream.js";

const LOG = process.env.SENPI_GUARD_REC_LOG;
const WINDOW = Number(process.env.SENPI_GUARD_REC_WINDOW || 200000);
const COUNT = Boolean(process.env.SENPI_GUARD_REC_COUNT);
const bytes = (s) => Buffer.byteLength(s, "utf8");

function texts(message) {
    if (typeof message.content === "string") {
        return [message.content];
    }
    return Array.isArray(message.content)
        ? message.content.filter((p) => p && p.type === "text" && typeof p.text === "string").map((p) => p.text) : [];
}

export default function recordingProvider(pi) {
    pi.registerProvider("rec", {
        baseUrl: "http://127.0.0.1:9", apiKey: "unused", api: "senpi-guard-rec",
        models: [{ id: "rec-1", name: "recording test model", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: WINDOW, maxTokens: 1000 }],
        streamSimple(model, context) {
            const messages = context.messages.map((m) => ({ role: m.role, texts: texts(m) }));
            const system = bytes(context.systemPrompt ?? "");
            const input = COUNT ? Math.ceil((system + messages.flatMap((m) => m.texts).reduce((n, t) => n + bytes(t), 0)) / 4) : 1;
            if (LOG) {
                appendFileSync(LOG, JSON.stringify(COUNT ? { messages, system, input } : { messages }) + "\n");
            }
            const message = { role: "assistant", content: [{ type: "text", text: "ok" }], api: model.api,
                provider: model.provider, model: model.id, stopReason: "stop", timestamp: Date.now(),
                usage: { input, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: input + 1,
                    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } };
            return replyStream(createAssistantMessageEventStream, message);
        },
    });
}
