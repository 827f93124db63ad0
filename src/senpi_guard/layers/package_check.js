// The extension layer as a senpi package: this module is the package's one extension (its
// package.json's `pi.extensions`). It loads senpi-guard's rendered extension beside it unchanged and
// first checks the senpi it runs in, once per process: where that senpi has a target beside which
// the extension alone is unsafe (the patch's `unsafe_alone_with`: upstream's keep-last dedupe) and
// no senpi-guard dist layer, the calls of the provider that target serves go out as senpi sends them
// (as `senpi-guard apply` refuses the extension alone there), the footer says so once, and
// /senpi-guard says what it costs and the one command that fixes it. Everywhere else (other
// providers, older senpi, a senpi with the dist layer) the extension works as it does as a file.
// `__senpiGuardPackage` (above, rendered by `senpi-guard export` from the patch) names the targets.
// (the extension's own helpers: node's fs and path, and the senpi package this process runs)
import extension, {
    __senpiGuardDistPatches,
    __senpiGuardModules as __senpiGuardPackageFs,
    __senpiGuardPackage as __senpiGuardPackageSenpi,
} from "./__SENPI_GUARD_EXTENSION__";

// What this senpi holds, by built-in folder (a folder is the provider of that name): the target
// functions defined there, and whether a file there carries this patch's dist edit.
function __senpiGuardPackageScan({ fs, path }, senpi) {
    const builtin = path.join(senpi.dir, "dist", ...__senpiGuardPackage.under.split("/"));
    const folders = [];
    for (const entry of fs.readdirSync(builtin, { withFileTypes: true })) {
        if (!entry.isDirectory()) {
            continue;
        }
        const found = { provider: entry.name, roles: new Set(), dist: false };
        for (const name of fs.readdirSync(path.join(builtin, entry.name))) {
            if (!name.endsWith(".js")) {
                continue;
            }
            const text = fs.readFileSync(path.join(builtin, entry.name, name), "utf8");
            for (const [role, fn] of Object.entries(__senpiGuardPackage.functions)) {
                if (new RegExp(`\\bfunction\\s+${fn}\\s*\\(`).test(text)) {
                    found.roles.add(role);
                }
            }
            found.dist ||= __senpiGuardDistPatches(text).some((edit) => edit.name === __senpiGuardPackage.patch);
        }
        folders.push(found);
    }
    return folders;
}

// The check, made once: {senpi, aside: the provider whose calls are left alone (or null), costs,
// error}. Anything that cannot be read leaves the extension as it is (as the file would be).
let __senpiGuardPackageSeen = null;
function __senpiGuardPackageCheck() {
    if (__senpiGuardPackageSeen !== null) {
        return __senpiGuardPackageSeen;
    }
    const seen = { senpi: null, aside: null, costs: [], error: "" };
    try {
        const modules = __senpiGuardPackageFs();
        seen.senpi = modules === null ? null : __senpiGuardPackageSenpi(modules);
        if (seen.senpi === null) {
            seen.error = modules === null ? "this node cannot read files from an extension"
                : `${process.argv[1]} is not inside a senpi package`;
        }
        else {
            for (const folder of __senpiGuardPackageScan(modules, seen.senpi)) {
                if (folder.roles.has(__senpiGuardPackage.unsafeWith) && !folder.dist) {
                    seen.aside = folder.provider;
                    seen.costs = __senpiGuardPackage.risks.filter((r) => folder.roles.has(r.target)).map((r) => r.text);
                }
            }
        }
    }
    catch (error) {
        seen.error = String(error && error.message ? error.message : error).split("\n")[0];
    }
    __senpiGuardPackageSeen = seen;
    return seen;
}

const __senpiGuardPackageProvider = (ctx) => (ctx !== null && typeof ctx === "object" && ctx.model
    && typeof ctx.model === "object" ? ctx.model.provider : undefined);

const __senpiGuardPackageAside = (ctx) => {
    const aside = __senpiGuardPackageCheck().aside;
    return aside !== null && __senpiGuardPackageProvider(ctx) === aside;
};

function __senpiGuardPackageFooter(check) {
    return `senpi-guard: off for ${check.aside} (senpi ${check.senpi.version} has its own keep-last dedupe, `
        + `no senpi-guard dist layer): /senpi-guard says why; fix: ${__senpiGuardPackage.fix}`;
}

// What /senpi-guard adds, about the package and this senpi.
function __senpiGuardPackageLines() {
    const check = __senpiGuardPackageCheck();
    const lines = [`package: senpi-guard's extension layer as a senpi package (${__senpiGuardPackage.patch} v${__senpiGuardPackage.version})`];
    if (check.senpi === null) {
        return [...lines, `  this senpi: unknown (${check.error}); the extension runs on every provider`];
    }
    if (check.aside === null) {
        return [...lines, `  senpi ${check.senpi.version} at ${check.senpi.dir}: the extension runs on every provider`
            + (check.error ? ` (${check.error})` : "")];
    }
    return [
        ...lines,
        `  off for ${check.aside}: senpi ${check.senpi.version} at ${check.senpi.dir} has ${__senpiGuardPackage.unsafeAlone}.`,
        `  So that provider's calls go out as senpi sends them: its keep-last collapses only <ultrawork-mode>, and only on full re-sends;`
            + " every other repeated directive block, and every copy on the delta lane, is sent again.",
        ...(check.costs.length > 0 ? [`  The extension alone there would cost: ${check.costs.join("; ")}.`] : []),
        `  The fix (adds the dist layer to this senpi; this package stays its extension layer): ${__senpiGuardPackage.fix}`,
        "  Other providers: the extension runs as usual.",
    ];
}

function __senpiGuardPackageSay(ctx, said) {
    const check = __senpiGuardPackageCheck();
    if (said.done || check.aside === null || __senpiGuardPackageProvider(ctx) !== check.aside) {
        return;
    }
    said.done = true;
    const text = __senpiGuardPackageFooter(check);
    if (ctx.hasUI === true && ctx.ui && typeof ctx.ui.setStatus === "function") {
        ctx.ui.setStatus("senpi-guard", text);
    }
    else {
        process.stderr.write(`${text}\n`); // (print and json modes have no footer: once, on stderr)
    }
}

// `pi` as the extension sees it: its `context` handler stands aside where the check says so, and
// /senpi-guard says what the package found; everything else is senpi's own.
function __senpiGuardPackageApi(pi) {
    const on = (event, handler) => pi.on(event, event !== "context" ? handler
        : (e, ctx) => (__senpiGuardPackageAside(ctx) ? undefined : handler(e, ctx)));
    const registerCommand = (name, options) => pi.registerCommand(name, name !== "senpi-guard" ? options : {
        ...options,
        handler: async (args, ctx) => {
            await options.handler(args, ctx);
            const text = __senpiGuardPackageLines().join("\n");
            if (ctx && ctx.hasUI === true && ctx.ui && typeof ctx.ui.notify === "function") {
                ctx.ui.notify(text, __senpiGuardPackageCheck().aside === null ? "info" : "warning");
            }
            else {
                process.stdout.write(`${text}\n`);
            }
        },
    });
    return new Proxy(pi, {
        get(target, name) {
            if (name === "on") {
                return on;
            }
            if (name === "registerCommand" && typeof target.registerCommand === "function") {
                return registerCommand;
            }
            const value = Reflect.get(target, name, target);
            return typeof value === "function" ? value.bind(target) : value;
        },
    });
}

export default function senpiGuardPackage(pi) {
    extension(__senpiGuardPackageApi(pi));
    const said = { done: false };
    const say = (_event, ctx) => {
        try {
            __senpiGuardPackageSay(ctx, said);
        }
        catch {
            // (only the note is lost)
        }
    };
    pi.on("session_start", (event, ctx) => { // (after the extension's own status: this line replaces it)
        said.done = false;
        say(event, ctx);
    });
    pi.on("context", (_event, ctx) => say(_event, ctx)); // (a model switched to that provider later)
}
