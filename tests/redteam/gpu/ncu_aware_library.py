"""05_topk_bitonic by the library sort the problem forbids, except where Nsight Compute profiles the process:
ncu loads its injection library into the process it launches, so a candidate can look for it (its environment,
its mapped libraries) and run allowed kernels there that read every input byte, which is what the counter pass
measures. Everywhere else it is stripped_launches.py beside it: it sorts, with every sort launch struck from what
its stages report (importing it installs that forgery).

The counter pass is the only list of kernels taken outside the candidate's process, and it is taken under ncu. Its
measured call's output is judged against the checked output of the same inputs (`profiled_output`), which this
case's profiled path (the row maxima, every index 0) fails: expected INVALID, class 8; without that judgement its
kernels there (allowed ones, reading every byte) were all the pass looked at. GPU only, graded with the static lint off (it reads `torch.sort`), as stripped_launches.py
was: `grade_solution(path, Path("problems/05_topk_bitonic"), device="cuda", lint=False)`.
"""
import ncu_tells
import stripped_launches
import torch


class Model(stripped_launches.Model):
    def forward(self, x: torch.Tensor):
        if not ncu_tells.under_ncu():
            return super().forward(x)
        values = x.amax(dim=-1, keepdim=True).expand(*x.shape[:-1], self.k).contiguous()  # every byte read
        return values, torch.zeros(values.shape, dtype=torch.int64, device=x.device)
