// A test provider for the real senpi (this project's own code) that loops the way a stuck model
// does: registers `loop/loop-1`; for a prompt that says "loop" it answers each call with the same
// `read` of notes.txt, three times in a row, then says "ok". senpi's own loop guard sees three
// identical calls and adds its <system-reminder> notice. Each call's context (after every `context`
// handler) is logged to $SENPI_GUARD_REC_LOG as one JSON line, as recording_provider.js logs it.
import { appendFileSync } from "node:fs";
import { createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { replyStream } from "./reply_stream.js";

const LOG = process.env.SENPI_GUARD_REC_LOG;
const CALLS = 3;

function texts(message) {
    if (typeof message.content === "string") {
        return [message.content];
    }
    return Array.isArray(message.content)
        ? message.content.filter((p) => p && p.type === "text" && typeof p.text === "string").map((p) => p.text) : [];
}

// The calls made since the user's last prompt (a user message that is not a notice senpi added).
function callsSincePrompt(messages) {
    let calls = 0;
    for (let i = messages.length - 1; i >= 0; i--) {
        const m = messages[i];
        if (m.role === "user" && !texts(m).join("").startsWith("<system-reminder>")) {
            return { calls, prompt: texts(m).join("") };
        }
        if (m.role === "assistant" && Array.isArray(m.content)) {
            calls += m.content.filter((p) => p && p.type === "toolCall").length;
        }
    }
    return { calls, prompt: "" };
}

function toolCallStream(message) {
    const stream = createAssistantMessageEventStream();
    const call = message.content[0];
    queueMicrotask(() => {
        stream.push({ type: "start", partial: { ...message, content: [] } });
        stream.push({ type: "toolcall_start", contentIndex: 0, partial: { ...message, content: [{ ...call, arguments: {} }] } });
        stream.push({ type: "toolcall_delta", contentIndex: 0, delta: JSON.stringify(call.arguments), partial: message });
        stream.push({ type: "toolcall_end", contentIndex: 0, toolCall: call, partial: message });
        stream.push({ type: "done", reason: "toolUse", message });
        stream.end(message);
    });
    return stream;
}

export default function loopingProvider(pi) {
    let seq = 0;
    pi.registerProvider("loop", {
        baseUrl: "http://127.0.0.1:9", apiKey: "unused", api: "senpi-guard-loop",
        models: [{ id: "loop-1", name: "looping test model", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000, maxTokens: 1000 }],
        streamSimple(model, context) {
            if (LOG) {
                const messages = context.messages.map((m) => ({ role: m.role, texts: texts(m) }));
                appendFileSync(LOG, JSON.stringify({ messages }) + "\n");
            }
            const { calls, prompt } = callsSincePrompt(context.messages);
            const base = { api: model.api, provider: model.provider, model: model.id, timestamp: Date.now(),
                usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2,
                    cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } } };
            if (/\bloop\b/.test(prompt) && calls < CALLS) {
                const call = { type: "toolCall", id: `loop_${process.pid}_${seq++}`, name: "read",
                    arguments: { path: "notes.txt" } };
                return toolCallStream({ ...base, role: "assistant", content: [call], stopReason: "toolUse" });
            }
            const message = { ...base, role: "assistant", content: [{ type: "text", text: "ok" }], stopReason: "stop" };
            return replyStream(createAssistantMessageEventStream, message);
        },
    });
}
