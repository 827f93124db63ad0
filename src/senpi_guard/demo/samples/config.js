// senpi-guard's sample: where the agent keeps its state, in the shape of senpi's compiled
// dist/config.js (2026.7.28 - 2026.8.11): this project's own code, read by syntax only.
import { readFileSync } from "node:fs";
import { homedir } from "node:os";
import { dirname, join } from "node:path";
import { findNearestParentConfigDir } from "./nearest-parent-config.js";
import { normalizePath } from "./utils/paths.js";
export function getPackageDir() {
    const override = process.env.PI_PACKAGE_DIR;
    if (override) {
        return normalizePath(override);
    }
    return dirname(import.meta.dirname);
}
export function getPackageJsonPath() {
    return join(getPackageDir(), "package.json");
}
let pkg = {};
try {
    pkg = JSON.parse(readFileSync(getPackageJsonPath(), "utf-8"));
}
catch (failure) {
    const error = failure;
    if (error.code !== "ENOENT")
        throw failure;
}
const piConfigName = pkg.piConfig?.name;

export const APP_NAME = piConfigName || "pi";
export const CONFIG_DIR_NAME = pkg.piConfig?.configDir || ".pi";
export const ENV_AGENT_DIR = `${APP_NAME.toUpperCase()}_CODING_AGENT_DIR`;
// where the agent keeps its state
export function resolveAgentDir(where, home, fromEnv) {
    if (fromEnv) {
        return normalizePath(fromEnv, { homeDir: home });
    }
    const found = findNearestParentConfigDir(where, home, CONFIG_DIR_NAME, "agent");
    return found ? join(found, "agent") : join(home, CONFIG_DIR_NAME, "agent");
}
export function getAgentDir() {
    return resolveAgentDir(process.cwd(), homedir(), process.env[ENV_AGENT_DIR]);
}
//# sourceMappingURL=config.js.map