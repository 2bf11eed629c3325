import java.util.*;
public class Main {
    public static void main(String[] args) {
        long n = new Scanner(System.in).nextLong();
        TreeSet<Long> d = new TreeSet<>(); d.add(1L);
        for (long i = 2; i * i <= n; ++i) if (n % i == 0) { d.add(i); d.add(n / i); }
        List<Long> ans = new ArrayList<>(); ans.add(1L);
        for (long i : d) { long t = n / i; ans.add(t * (2 + (t - 1) * i) / 2); }
        Collections.sort(ans);
        StringBuilder sb = new StringBuilder();
        for (int k = 0; k < ans.size(); ++k) { if (k > 0) sb.append(' '); sb.append(ans.get(k)); }
        System.out.println(sb);
    }
}
