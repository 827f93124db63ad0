// Test patch checks: the patched affinity module, composed with every other patch on the file, gives
// what the original gives, and carries this patch's identity function (by name, in its source).
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";

const ACCOUNTS = [{ name: "a" }, { name: "b" }, { name: "c", blockedUntil: Date.now() + 60_000 }];

async function sibling(spec, name) {
    return (await import(pathToFileURL(spec).href))[name];
}

export async function replay(ctx) {
    const [role, module] = Object.entries(ctx.modules)[0];
    if (module.error) {
        ctx.record(role, "imports", false, module.error);
        return;
    }
    const candidate = module.spec.candidate ?? module.spec.original;
    const text = readFileSync(candidate, "utf8");
    const own = { function: "__testAffinitySelect" };
    ctx.record(role, "carries-its-function", text.includes(`function ${own.function}(`), `no ${own.function} in the file`);
    const before = { key: await sibling(module.spec.original, "getAffinityKey"), order: await sibling(module.spec.original, "rendezvousOrder"),
        select: await sibling(module.spec.original, "selectAccount") };
    const after = { key: await sibling(candidate, "getAffinityKey"), order: await sibling(candidate, "rendezvousOrder"),
        select: await sibling(candidate, "selectAccount") };
    for (const options of [{}, { sessionId: "s1" }, { affinityKey: "k", sessionId: "s2" }]) {
        ctx.record(role, "same-key", before.key(options) === after.key(options), JSON.stringify(options));
        const names = (list) => list.map((a) => a.name).join(",");
        ctx.record(role, "same-order", names(before.order("x" + JSON.stringify(options), ACCOUNTS))
            === names(after.order("x" + JSON.stringify(options), ACCOUNTS)), JSON.stringify(options));
        ctx.record(role, "same-account", before.select(ACCOUNTS, options).name === after.select(ACCOUNTS, options).name,
            JSON.stringify(options));
    }
    ctx.stats[role] = { proof: "call" };
}
