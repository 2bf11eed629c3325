import java.util.*;
public class Main {
    public static void main(String[] args) {
        Scanner s = new Scanner(System.in);
        int n = s.nextInt(), x = s.nextInt();
        boolean[] vis = new boolean[(1 << 18) + 1];
        int lmt = 1 << n, prev = 0, cnt = 0;
        vis[0] = true; if (x < vis.length) vis[x] = true;
        StringBuilder sb = new StringBuilder();
        for (int i = 1; i < lmt; ++i) {
            if (vis[i]) continue;
            if (cnt++ > 0) sb.append(' ');
            sb.append(prev ^ i); prev = i; vis[i] = true;
            if ((i ^ x) < vis.length) vis[i ^ x] = true;
        }
        System.out.println(cnt);
        System.out.println(sb);
    }
}
