const __testAffinitySelectConfig = /*senpi-guard:config*/{}/*senpi-guard:config-end*/;
function __testAffinitySelect(account) {
    return account;
}
