"""Decks: a problem's identity is (deck, problem). Our own deck is `main` (this repository's `problems/`); a deck
written for another benchmark is named after it and the hardware its published board ran on (`kbh-h100`,
`kbh-rtxpro6000`), so two decks' `01_fp8_gemm` never share a page, a column or a URL."""

from __future__ import annotations

import re

MAIN_DECK = "main"
DECK_RE = r"^[a-z0-9][a-z0-9-]*$"
DECK_TITLES = {
    MAIN_DECK: "KernelBench Hard deck",
    "kbh-h100": "KernelBench-Hard H100 deck",
    "kbh-rtxpro6000": "KernelBench-Hard RTX PRO 6000 deck",
}
# a published KernelBench-Hard board's deck by the hardware profile its board maps to: the H100 variants share one
# deck (the problems are the same files whichever H100 the board was measured on)
_KBH_BY_GPU = {"h100_pcie": "kbh-h100", "h100_sxm": "kbh-h100", "rtx_pro_6000": "kbh-rtxpro6000"}


def kbh_deck_for_gpu(gpu_key: str) -> str:
    """The deck of a KernelBench-Hard board published for the GPU profile `gpu_key`."""
    return _KBH_BY_GPU.get(gpu_key) or "kbh-" + (re.sub(r"[^a-z0-9]+", "", gpu_key.lower()) or "unknown")


def deck_title(deck: str) -> str:
    return DECK_TITLES.get(deck, deck)


def is_main(deck: str) -> bool:
    return deck == MAIN_DECK
