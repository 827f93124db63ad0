// A test provider for the real senpi (this project's own code): registers `rec/rec-1`, records what
// each call receives (the context after every `context` handler) to $SENPI_GUARD_REC_LOG as one JSON
// line, and answers "ok". A provider of this kind has no lanes: every call gets the whole context.
import { appendFileSync } from "node:fs";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { replyStream } from "./reply_stream.js";

const LOG = process.env.SENPI_GUARD_REC_LOG;
const WINDOW = Number(process.env.SENPI_GUARD_REC_WINDOW || 200000);

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
            if (LOG) {
                const messages = context.messages.map((m) => ({ role: m.role, texts: texts(m) }));
                appendFileSync(LOG, JSON.stringify({ messages }) + "\n");
            }
            const message = { role: "assistant", content: [{ type: "text", text: "ok" }], api: model.api,
                provider: model.provider, model: model.id, stopReason: "stop", timestamp: Date.now(),
                usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
                    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } };
            return replyStream(createAssistantMessageEventStream, message);
        },
    });
}
