"""Number types for the on-disk models: each says what a number means, and refuses what it cannot mean.

Every number of a result.json, annotation or baselines file is untrusted. A float must be finite (JSON has no
NaN or Infinity, but a careless writer produces them), an integer must fit in 64 bits (what the site's encoders
and every reader in another language take), a count or a duration cannot be negative, a fraction of the
hardware's ceiling has a range, and `true` or `"0.5"` is not a number. A value outside its type is a validation
error naming the field, so the file is reported with its line instead of reaching a page as "nan%" or breaking
an encoder far from where it came in.
"""

from __future__ import annotations

import math
import numbers
from typing import Annotated, Any

from pydantic import BeforeValidator, Field

INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
# A run's wall clock or budget: far above any real session (a year), far below where formatting breaks down.
MAX_SECONDS = 366 * 24 * 3600.0
# peak_fraction above 1 is faster than the hardware allows: the grader's speed-of-light gate marks such a run
# INVALID and records the fraction it measured, which a near-empty kernel can push to thousands. A million is
# beyond what a timer's resolution can produce on any shape of the deck.
MAX_FRACTION = 1e6
MAX_LINE = 10**9  # a line number of a quoted file


def _no_bool_or_text(value: Any) -> Any:
    """JSON `true` is not 1 and `"0.5"` is not 0.5 here: a number must be written as one."""
    if isinstance(value, (bool, str, bytes)):
        raise ValueError(f"must be a number, not {type(value).__name__} {value!r:.40}")
    return value


def _whole(value: Any) -> Any:
    """A whole number within 64 bits. JSON readers turn an integer too large for 64 bits into a float, so a
    float is taken only when it is whole and within range (2.0 is 2; 1e30 is refused, not rounded)."""
    value = _no_bool_or_text(value)
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer() and INT64_MIN <= value <= INT64_MAX):
            raise ValueError(f"must be a whole number within 64 bits, not {value!r:.40}")
        return int(value)
    if isinstance(value, int) and not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"must be a whole number within 64 bits, not one of {len(str(abs(value)))} digits")
    return value


_Whole = BeforeValidator(_whole)

# pydantic's strict float takes ints and floats (numpy's included) but not bools or text, in its own code: a
# result.json holds thousands of samples, and a Python check per number costs time and memory per error
Finite = Annotated[float, Field(strict=True, allow_inf_nan=False)]
NonNegative = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0)]
Positive = Annotated[float, Field(strict=True, allow_inf_nan=False, gt=0)]
Seconds = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_SECONDS)]
Fraction = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=MAX_FRACTION)]
Usd = NonNegative
Share = Annotated[float, Field(strict=True, allow_inf_nan=False, ge=0, le=1)]  # a part of a whole

Int64 = Annotated[int, _Whole, Field(ge=INT64_MIN, le=INT64_MAX)]
Count = Annotated[int, _Whole, Field(ge=0, le=INT64_MAX)]
Index = Count
Trial = Annotated[int, _Whole, Field(ge=1, le=INT64_MAX)]
LineNumber = Annotated[int, _Whole, Field(ge=1, le=MAX_LINE)]
Version = Annotated[int, _Whole, Field(ge=1, le=INT64_MAX)]



def _scalar(value: Any) -> Any:
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, numbers.Integral) and INT64_MIN <= int(value) <= INT64_MAX:
        return int(value)
    # a float beyond 64 bits is most likely an integer too large for them, turned into a float by the JSON reader
    # (typeshed's numbers.Real declares no comparison with a float, which every Real supports)
    if isinstance(value, numbers.Real) and not isinstance(value, numbers.Integral) and \
            abs(value) < 2.0**63:  # type: ignore[operator]
        return float(value)
    raise ValueError(f"must be text, true/false, a finite number or a whole number within 64 bits, "
                     f"not {value!r:.40}")


# A value of a shape (`{"M": 4096, "dtype": "bf16"}`): a scalar every encoder can write, nothing nested.
ShapeValue = Annotated[Any, BeforeValidator(_scalar)]
