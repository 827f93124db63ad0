// A test provider with a small context window (this project's own code): registers `ovf/ovf-1`
// ($SENPI_GUARD_OVF_WINDOW tokens), counts a call's input as a provider without a known tokenizer
// does (UTF-8 bytes of the system prompt and the message texts, 4 a token), and answers a call over
// the window with the error an Anthropic model gives for it ("prompt is too long"), one within it
// with "ok", and senpi's summary request with a short summary. Each call is logged as one JSON line
// to $SENPI_GUARD_OVF_LOG: what it was, its tokens, and its system prompt and messages' texts.
import { appendFileSync } from "node:fs";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";

const LOG = process.env.SENPI_GUARD_OVF_LOG;
const WINDOW = Number(process.env.SENPI_GUARD_OVF_WINDOW || 8000);
const SUMMARY = "You are a context summarization assistant";
const bytes = (s) => Buffer.byteLength(s, "utf8");
const texts = (m) => (typeof m.content === "string" ? [m.content] : Array.isArray(m.content)
    ? m.content.filter((p) => p && p.type === "text" && typeof p.text === "string").map((p) => p.text) : []);

function stream(message, text) {
    const out = createAssistantMessageEventStream();
    queueMicrotask(() => {
        out.push({ type: "start", partial: { ...message, content: [] } });
        if (message.stopReason === "error") {
            out.push({ type: "error", reason: "error", error: message });
        } else {
            out.push({ type: "text_start", contentIndex: 0, partial: { ...message, content: [{ type: "text", text: "" }] } });
            out.push({ type: "text_delta", contentIndex: 0, delta: text, partial: message });
            out.push({ type: "text_end", contentIndex: 0, content: text, partial: message });
            out.push({ type: "done", reason: "stop", message });
        }
        out.end(message);
    });
    return out;
}

export default function overflowProvider(pi) {
    pi.registerProvider("ovf", {
        baseUrl: "http://127.0.0.1:9", apiKey: "unused", api: "senpi-guard-ovf",
        models: [{ id: "ovf-1", name: "small-window test model", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: WINDOW, maxTokens: 500 }],
        streamSimple(model, context) {
            const system = context.systemPrompt ?? "";
            const messages = context.messages.map((m) => ({ role: m.role, texts: texts(m) }));
            const tokens = Math.ceil((bytes(system) + messages.flatMap((m) => m.texts).reduce((n, t) => n + bytes(t), 0)) / 4);
            const kind = system.startsWith(SUMMARY) ? "summary" : tokens > WINDOW ? "over" : "call";
            if (LOG) {
                appendFileSync(LOG, JSON.stringify({ kind, tokens, system, messages }) + "\n");
            }
            const text = kind === "summary" ? "## Goal\nA summary." : "ok";
            const input = kind === "over" ? 0 : tokens;
            const message = { role: "assistant", content: kind === "over" ? [] : [{ type: "text", text }], api: model.api,
                provider: model.provider, model: model.id, stopReason: kind === "over" ? "error" : "stop",
                timestamp: Date.now(),
                usage: { input, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: input + 1,
                    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
                ...(kind === "over" ? { errorMessage: `prompt is too long: ${tokens} tokens > ${WINDOW} maximum` } : {}) };
            return stream(message, text);
        },
    });
}
