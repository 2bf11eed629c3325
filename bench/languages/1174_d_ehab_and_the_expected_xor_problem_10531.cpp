#include <cstdio>
#include <vector>
#include <string>
int main() {
    int n, x; scanf("%d %d", &n, &x);
    std::vector<char> vis((1 << 18) + 1, 0);
    std::vector<int> ans;
    int lmt = 1 << n, prev = 0;
    vis[0] = 1; if (x < (int)vis.size()) vis[x] = 1;
    for (int i = 1; i < lmt; ++i) {
        if (vis[i]) continue;
        ans.push_back(prev ^ i); prev = i; vis[i] = 1;
        if ((i ^ x) < (int)vis.size()) vis[i ^ x] = 1;
    }
    std::string out = std::to_string(ans.size()) + "\n";
    for (size_t k = 0; k < ans.size(); ++k) { if (k) out += ' '; out += std::to_string(ans[k]); }
    puts(out.c_str());
}
