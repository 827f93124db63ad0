// A priced test provider for the real senpi (this project's own code): registers `priced/priced-1`
// (its list price comes from the agent dir's models.json, `modelOverrides`, as a user prices a
// model) and answers every call with a usage the way a provider with a prompt cache reports it:
// the texts it received that start the same as the previous call's are cache reads, the rest cache
// writes (4 bytes a token), a few plain input tokens for the request's tail, and senpi's own
// calculateCost at the model's rates. Each call's text bytes and usage go to $SENPI_GUARD_PRICED_LOG.
import { appendFileSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { calculateCost, createAssistantMessageEventStream } from "@earendil-works/pi-ai";
import { replyStream } from "./reply_stream.js";

const LOG = process.env.SENPI_GUARD_PRICED_LOG;
const TAIL_TOKENS = 2;
const OUTPUT_TOKENS = 7;
// (one senpi process per prompt: the cache's state outlives each, as a provider's does)
const STATE = LOG ? `${LOG}.state` : null;
let previous = STATE && existsSync(STATE) ? JSON.parse(readFileSync(STATE, "utf8")) : [];

function texts(messages) {
    const found = [];
    for (const m of messages) {
        if (typeof m.content === "string") {
            found.push(m.content);
        }
        else if (Array.isArray(m.content)) {
            for (const p of m.content) {
                if (p && p.type === "text" && typeof p.text === "string") {
                    found.push(p.text);
                }
            }
        }
    }
    return found;
}

const bytes = (s) => Buffer.byteLength(s, "utf8");

function cachedBytes(now, before) {
    let i = 0;
    let cached = 0;
    while (i < now.length && i < before.length && now[i] === before[i]) {
        cached += bytes(now[i]);
        i++;
    }
    if (i < now.length && i < before.length) {
        let k = 0;
        while (k < now[i].length && k < before[i].length && now[i][k] === before[i][k]) {
            k++;
        }
        cached += bytes(now[i].slice(0, k));
    }
    return cached;
}

function usageOf(model, now) {
    const total = now.reduce((n, t) => n + bytes(t), 0);
    const cached = cachedBytes(now, previous);
    const usage = { input: TAIL_TOKENS, output: OUTPUT_TOKENS, cacheRead: Math.round(cached / 4),
        cacheWrite: Math.round((total - cached) / 4), totalTokens: 0,
        cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } };
    usage.totalTokens = usage.input + usage.output + usage.cacheRead + usage.cacheWrite;
    calculateCost(model, usage);
    return { usage, total };
}

export default function pricedProvider(pi) {
    pi.registerProvider("priced", {
        baseUrl: "http://127.0.0.1:9", apiKey: "unused", api: "senpi-guard-priced",
        models: [{ id: "priced-1", name: "priced test model", reasoning: false, input: ["text"],
            cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0 }, contextWindow: 200000, maxTokens: 1000 }],
        streamSimple(model, context) {
            const now = texts(context.messages);
            const { usage, total } = usageOf(model, now);
            previous = now;
            if (STATE) {
                writeFileSync(STATE, JSON.stringify(now));
            }
            if (LOG) {
                appendFileSync(LOG, JSON.stringify({ bytes: total, usage, cost: model.cost }) + "\n");
            }
            const message = { role: "assistant", content: [{ type: "text", text: "ok" }], api: model.api,
                provider: model.provider, model: model.id, stopReason: "stop", timestamp: Date.now(), usage };
            return replyStream(createAssistantMessageEventStream, message);
        },
    });
}
