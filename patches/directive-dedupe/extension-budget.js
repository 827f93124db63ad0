// The bound on the replay (rendered after extension-view.js, in the same module): the size of the
// context each call carries — the whole context, which is what the `context` event holds on every
// lane — against the model's context window. Past budget.warn_at of it the user is told once per
// session, with the figures and what to do; past budget.block_at (opt-in) the call is stopped
// before anything is sent.
//
// The size is what the call carries as this extension's handler returns it: the UTF-8 bytes of those
// messages plus the system prompt, counted as a provider without a known tokenizer is estimated, 4
// bytes a token. Not senpi's ctx.getContextUsage(): inside a `context` handler that is its estimate
// from before the handlers ran (the copies this extension collapses counted in full), so a budget on
// it would warn, or stop a call, on figures that are never sent.
function __senpiGuardBudgetSettings() {
    const config = __senpiGuardConfig();
    const share = (key) => (typeof config[key] === "number" && config[key] > 0 ? config[key] : 0);
    return { warnAt: share("budget.warn_at"), blockAt: share("budget.block_at") };
}

function __senpiGuardMeasure(call, ctx) {
    const system = typeof ctx.getSystemPrompt === "function" ? ctx.getSystemPrompt() : "";
    const bytes = call.bytes + __senpiGuardBytes(system);
    const model = ctx.model && typeof ctx.model === "object" ? ctx.model : null;
    // (the window only, where a host gives no ctx.model: senpi's usage figure holds it too)
    const usage = model === null && typeof ctx.getContextUsage === "function" ? ctx.getContextUsage() : undefined;
    const window = model !== null ? (model.contextWindow > 0 ? model.contextWindow : null)
        : (usage && usage.contextWindow > 0 ? usage.contextWindow : null);
    return { bytes, tokens: Math.ceil(bytes / 4), window, model: model !== null ? String(model.id) : "the model" };
}

function __senpiGuardShare(measure) {
    return `≈${__senpiGuardNum(measure.tokens)} tokens, ${Math.floor((measure.tokens / measure.window) * 100)}% `
        + `of ${measure.model}'s ${__senpiGuardNum(measure.window)}-token context window`;
}

// Warns or stops the call; true when it stopped it.
function __senpiGuardBudget(figures, call, ctx) {
    const { warnAt, blockAt } = __senpiGuardBudgetSettings();
    const measure = call.measure;
    if ((warnAt === 0 && blockAt === 0) || measure.window === null) {
        return false;
    }
    const share = measure.tokens / measure.window;
    if (blockAt > 0 && share >= blockAt) {
        figures.pending = null; // (nothing is sent: nothing counts)
        figures.blocked++;
        __senpiGuardTell(ctx, `senpi-guard: stopped this call before it was sent: it would carry ${__senpiGuardShare(measure)} `
            + `(budget.block_at = ${blockAt}). Run /compact to shrink the context, then send the prompt again.`, "error");
        __senpiGuardStop(ctx);
        return true;
    }
    if (warnAt > 0 && share >= warnAt && !figures.warned) {
        figures.warned = true;
        __senpiGuardTell(ctx, `senpi-guard: this call carries ${__senpiGuardShare(measure)} (budget.warn_at = ${warnAt}). `
            + "Run /compact to shrink the context before it fills up (told once per session).", "warning");
    }
    return false;
}

// ctx.abort() from a `context` handler stops the call before the provider is called, but senpi
// 2026.8.22-2 leaves the abort's own promise rejected with an AbortError that nothing handles
// (node then ends the process). While a stop is under way such a rejection is taken as handled;
// any other one is thrown again, as node would have it.
let __senpiGuardAbortGuard = null;

function __senpiGuardStop(ctx) {
    if (__senpiGuardAbortGuard === null && typeof process.on === "function") {
        const alone = process.listenerCount("unhandledRejection") === 0; // (else others decide)
        __senpiGuardAbortGuard = (reason) => {
            if (alone && !(reason !== null && typeof reason === "object" && reason.name === "AbortError")) {
                throw reason;
            }
        };
        process.on("unhandledRejection", __senpiGuardAbortGuard);
    }
    ctx.abort();
}

function __senpiGuardStopped() {
    if (__senpiGuardAbortGuard !== null) {
        process.off("unhandledRejection", __senpiGuardAbortGuard);
        __senpiGuardAbortGuard = null;
    }
}
