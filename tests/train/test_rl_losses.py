"""Forward values and per-token gradients of the policy losses against the reference formulas."""
import pytest
import torch

from factory_train.rl import (
    AdaptiveEntropyController, PolicyLossConfig, agg_loss, cispo_loss, entropy_from_logits, get_policy_loss_fn,
    gppo_loss, kl_penalty, ppo_clip_loss, sft_loss,
)

EL, EH, C = 0.2, 0.28, 3.0
CFG = PolicyLossConfig(clip_ratio_low=EL, clip_ratio_high=EH, clip_ratio_c=C)


def _grad(fn, old, new, adv, mask=None, cfg=CFG, mode="seq-mean-token-sum"):
    """Gradient of the summed per-token loss w.r.t. logπ (B=1 row → seq-mean-token-sum is a plain sum)."""
    logp = new.clone().requires_grad_(True)
    mask = torch.ones_like(new) if mask is None else mask
    loss, metrics = fn(old, logp, adv, mask, mode, cfg)
    loss.backward()
    return loss.detach(), logp.grad, metrics


def _case_tensors():
    # (ratio, A) cases: inside, A>0 above 1+eh, A<0 below 1-el, A>0 below 1-el, A<0 above 1+eh, A<0 above c
    ratios = torch.tensor([[1.05, 1.6, 0.5, 0.5, 1.6, 4.0]])
    adv = torch.tensor([[0.7, 1.3, -0.9, 0.8, -1.1, -0.6]])
    old = torch.randn(1, 6)
    return old, old + ratios.log(), adv, ratios


def test_ppo_forward_and_grad():
    old, new, adv, r = _case_tensors()
    loss, g, m = _grad(ppo_clip_loss, old, new, adv)
    clip = torch.clamp(r, 1 - EL, 1 + EH)
    per_tok = torch.maximum(-adv * r, -adv * clip)
    per_tok = torch.where(adv < 0, torch.minimum(per_tok, -adv * C), per_tok)
    assert loss == pytest.approx(per_tok.sum().item(), rel=1e-5)
    # dL/dlogp = -A·r when unclipped, 0 when clipped (incl. dual clip)
    expect = torch.tensor([[-0.7 * 1.05, 0.0, 0.0, -0.8 * 0.5, 1.1 * 1.6, 0.0]])
    torch.testing.assert_close(g, expect, rtol=1e-5, atol=1e-6)
    assert m["pg_clipfrac"] == pytest.approx(2 / 6)
    assert m["pg_clipfrac_lower"] == pytest.approx(1 / 6)


def test_gppo_forward_equals_ppo_and_gradient_factors():
    old, new, adv, r = _case_tensors()
    loss_ppo, _, _ = _grad(ppo_clip_loss, old, new, adv)
    loss, g, m = _grad(gppo_loss, old, new, adv)
    assert loss == pytest.approx(loss_ppo.item(), rel=1e-6)
    # F = 1+eh (A>0, r>1+eh); 1-el (A<0, r<1-el); δ otherwise; dual-clipped token → 0
    F = torch.tensor([[1.05, 1 + EH, 1 - EL, 0.5, 1.6, 0.0]])
    torch.testing.assert_close(g, -F * adv, rtol=1e-5, atol=1e-6)
    assert m["pg_clipfrac_high"] == pytest.approx(1 / 6) and m["pg_clipfrac_low"] == pytest.approx(1 / 6)


def test_gppo_general_beta():
    old, new, adv, _ = _case_tensors()
    cfg = PolicyLossConfig(clip_ratio_low=EL, clip_ratio_high=EH, clip_ratio_c=C, gppo_beta1=0.25, gppo_beta2=0.5)
    _, g, _ = _grad(gppo_loss, old, new, adv, cfg=cfg)
    F = torch.tensor([[1.05, 0.5 * (1 + EH), 0.25 * (1 - EL), 0.5, 1.6, 0.0]])
    torch.testing.assert_close(g, -F * adv, rtol=1e-5, atol=1e-6)


def test_gppo_matches_klear_one_line_clamp_form():
    """Klear's form clamp(r, (1−ε_l)/sg(r)·r, (1+ε_h)/sg(r)·r): autograd through tensor bounds agrees."""
    torch.manual_seed(0)
    old = torch.randn(4, 16)
    new = old + 0.5 * torch.randn(4, 16)
    adv = torch.randn(4, 1).expand(4, 16).contiguous()
    mask = (torch.rand(4, 16) > 0.2).float()
    _, g, _ = _grad(gppo_loss, old, new, adv, mask, mode="token-mean")
    logp = new.clone().requires_grad_(True)
    r = torch.exp(logp - old)
    pg2 = -adv * torch.clamp(r, (1 - EL) / r.detach() * r, (1 + EH) / r.detach() * r)
    pg = torch.maximum(-adv * r, pg2)
    pg = torch.where(adv < 0, torch.minimum(pg, -adv * C), pg)
    ((pg * mask).sum() / mask.sum()).backward()
    torch.testing.assert_close(g, logp.grad, rtol=1e-5, atol=1e-7)


def test_cispo_gradient_only_via_logprob():
    old, new, adv, r = _case_tensors()
    cfg = PolicyLossConfig(clip_ratio_low=EL, clip_ratio_high=EH)
    loss, g, m = _grad(cispo_loss, old, new, adv, cfg=cfg)
    w = torch.clamp(r, 1 - EL, 1 + EH)
    assert loss == pytest.approx((-w * adv * new).sum().item(), rel=1e-5)
    torch.testing.assert_close(g, -w * adv, rtol=1e-5, atol=1e-6)  # F = clip(δ) for every sign of A
    assert m["pg_clipfrac"] == pytest.approx(5 / 6)
    _, g_cap, _ = _grad(cispo_loss, old, new, adv, cfg=PolicyLossConfig(cispo_cap=1.5))  # TRL absolute cap
    torch.testing.assert_close(g_cap, -torch.clamp(r, max=1.5) * adv, rtol=1e-5, atol=1e-6)


def test_all_losses_reduce_to_policy_gradient_on_policy():
    """At δ = 1 PPO, GPPO and CISPO all give −A·∇logπ."""
    torch.manual_seed(1)
    old = torch.randn(3, 5)
    adv = torch.randn(3, 5)
    for name in ("vanilla", "gppo", "cispo"):
        _, g, _ = _grad(get_policy_loss_fn(name), old, old.clone(), adv, mode="seq-mean-token-sum")
        torch.testing.assert_close(g, -adv / 3, rtol=1e-5, atol=1e-6)


def test_agg_modes():
    L = torch.tensor([[1.0, 2.0, 3.0, 0.0], [4.0, 5.0, 0.0, 0.0]])
    m = torch.tensor([[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 0.0, 0.0]])
    assert agg_loss(L, m, "token-mean") == pytest.approx(15 / 5)
    assert agg_loss(L, m, "seq-mean-token-sum") == pytest.approx((6 + 9) / 2)
    assert agg_loss(L, m, "seq-mean-token-mean") == pytest.approx((2 + 4.5) / 2)
    assert agg_loss(L, m, "seq-mean-token-sum-norm") == pytest.approx(15 / 4)
    assert agg_loss(L, m, "seq-mean-token-sum-norm", loss_scale_factor=10) == pytest.approx(1.5)
    with pytest.raises(ValueError):
        agg_loss(L, m, "bogus")


def test_rollout_is_weights_and_dict_config():
    old, new, adv, _ = _case_tensors()
    w = torch.full_like(new, 0.5)
    l1, _ = ppo_clip_loss(old, new, adv, torch.ones_like(new), "token-mean", {"clip_ratio_high": EH})
    l2, _ = ppo_clip_loss(old, new, adv, torch.ones_like(new), "token-mean", {"clip_ratio_high": EH}, w)
    assert l2 == pytest.approx(0.5 * l1.item())


def test_sft_loss_positive_only():
    logp = torch.log(torch.tensor([[0.5, 0.25], [0.1, 0.1]])).requires_grad_(True)
    mask = torch.ones(2, 2)
    loss, m = sft_loss(logp, mask, torch.tensor([True, False]), alpha=0.1)
    expected = 0.1 * -(torch.log(torch.tensor(0.5)) + torch.log(torch.tensor(0.25))) / 2
    assert loss.item() == pytest.approx(expected.item())
    loss.backward()
    assert logp.grad[1].abs().sum() == 0 and m["sft_positive_frac"] == 0.5


def test_entropy_and_kl():
    logits = torch.tensor([[0.0, 0.0, 0.0, 0.0]])
    assert entropy_from_logits(logits).item() == pytest.approx(torch.log(torch.tensor(4.0)).item())
    lp, ref = torch.tensor([-1.0]), torch.tensor([-1.5])
    assert kl_penalty(lp, ref, "kl").item() == pytest.approx(0.5)
    assert kl_penalty(lp, ref, "mse").item() == pytest.approx(0.125)
    d = -0.5
    assert kl_penalty(lp, ref, "low_var_kl").item() == pytest.approx(torch.exp(torch.tensor(d)).item() - d - 1)


def test_adaptive_entropy_controller():
    ctl = AdaptiveEntropyController(target=0.2, delta=1e-3, c_max=2.5e-3)
    assert ctl.update(0.1) == 0.0  # α_0 = c_0 = 0, then c rises
    assert ctl.update(0.1) == pytest.approx(1e-3)
    ctl.update(0.1)
    assert ctl.update(0.1) == pytest.approx(2.5e-3)  # capped at c_max
    assert ctl.update(0.5) == 0.0  # entropy above target → no bonus, c decays
    assert ctl.coef == pytest.approx(1.5e-3)
