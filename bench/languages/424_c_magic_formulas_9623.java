import java.io.*;
import java.util.*;
public class Main {
    public static void main(String[] args) throws IOException {
        StreamTokenizer st = new StreamTokenizer(new BufferedReader(new InputStreamReader(System.in)));
        st.nextToken(); int n = (int) st.nval;
        long[] a = new long[n]; long[] dp = new long[n + 1];
        for (int i = 0; i < n; ++i) { st.nextToken(); a[i] = (long) st.nval; }
        long pre = 0;
        for (int i = 1; i <= n; ++i) { pre ^= i; dp[i] = pre; }
        long ans = 0;
        for (int i = 1; i <= n; ++i) ans ^= a[i - 1] ^ (dp[i - 1] * ((n / i) % 2)) ^ dp[n % i];
        System.out.println(ans);
    }
}
