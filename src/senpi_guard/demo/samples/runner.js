// Runs extension handlers. emitContext: the messages are deep-cloned before the first handler; each
// handler's {messages} replaces the list; a handler that throws leaves the list as it was.
export class ExtensionRunner {
    constructor(extensions, runtime, cwd) {
        this.extensions = extensions;
        this.runtime = runtime;
        this.cwd = cwd;
        this.errors = [];
    }
    async emitContext(messages) {
        let current = structuredClone(messages);
        for (const extension of this.extensions) {
            for (const handler of extension.handlers.get("context") ?? []) {
                try {
                    const result = await handler({ type: "context", messages: current }, { cwd: this.cwd });
                    if (result && Array.isArray(result.messages)) {
                        current = result.messages;
                    }
                }
                catch (error) {
                    this.errors.push({ path: extension.path, error: String(error) });
                }
            }
        }
        return current;
    }
}
//# sourceMappingURL=runner.js.map
