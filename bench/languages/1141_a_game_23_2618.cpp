#include <cstdio>
int main() {
    long long a, b; scanf("%lld %lld", &a, &b);
    if (b % a) { puts("-1"); return 0; }
    long long m = b / a; int t = 0;
    while (m % 2 == 0) { m /= 2; ++t; }
    while (m % 3 == 0) { m /= 3; ++t; }
    printf("%d\n", m == 1 ? t : -1);
}
