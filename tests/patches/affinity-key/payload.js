const __testAffinityConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testAffinityKey(key) {
    return key;
}
