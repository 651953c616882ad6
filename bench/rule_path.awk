# path_at(rule, n): the path that a size rule, as the plugin prints it
# (SizeRule::describe), takes for a transfer of n bytes:
#   never (direct at every size) | 0 (staged at every size)
#   N bytes (direct below, staged from) | N bytes (staged below, direct from)
#   direct below N bytes, staged from M, direct from K ...
function path_at(rule, n,    a, i, k, cur, parts) {
    if (rule ~ /^never/) return "direct"
    if (rule ~ /^0 \(staged/) return "staged"
    if (rule ~ /^[0-9]+ bytes \((direct|staged) below/) {
        split(rule, a, " ")
        sub(/\(/, "", a[3])
        return n < a[1] + 0 ? a[3] : (a[3] == "direct" ? "staged" : "direct")
    }
    k = split(rule, parts, ", ")
    split(parts[1], a, " ")
    cur = a[1]
    if (n < a[3] + 0) return cur
    for (i = 2; i <= k; i++) {
        split(parts[i], a, " ")
        if (n >= a[3] + 0) cur = a[1]
    }
    return cur
}
