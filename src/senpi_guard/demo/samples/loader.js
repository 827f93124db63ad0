import { pathToFileURL } from "node:url";
// Extension loading: each path's default export is a factory called with an API object whose
// on(event, handler) registers handlers in load order.
export function createExtensionRuntime() {
    return { handlers: new Map() };
}
export async function loadExtensions(paths, cwd, _options, runtime) {
    const extensions = [];
    const errors = [];
    for (const path of paths) {
        try {
            const module = await import(pathToFileURL(path).href);
            if (typeof module.default !== "function") {
                throw new Error("the default export is not a function");
            }
            const handlers = new Map();
            module.default({
                cwd,
                on(event, handler) {
                    handlers.set(event, [...(handlers.get(event) ?? []), handler]);
                },
            });
            extensions.push({ path, handlers });
        }
        catch (error) {
            errors.push({ path, error: String(error && error.message ? error.message : error) });
        }
    }
    return { extensions, errors, runtime };
}
//# sourceMappingURL=loader.js.map
