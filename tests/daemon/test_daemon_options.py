from __future__ import annotations

from pathlib import Path

import pytest

from warp_harness.config import ConfigError
from warp_harness.daemon.discovery import contract_siblings, has_kernels, kernel_module_for, relevant, walk
from warp_harness.daemon.options import RuntimeOptions, load_runtime_options


def test_runtime_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[tool.warp-harness]\ntrust = true\ndaemon = true\n"
        '[tool.warp-harness.runtime]\ndevices = ["cpu", "cuda:0"]\nfast_math = true\nlaunch-timeout-s = 3\n'
        "peak_bandwidth_gbs = { cpu = 20 }\nfuture_key = 1\n"
    )
    opts = load_runtime_options(tmp_path)
    assert opts.devices == ("cpu", "cuda:0") and opts.fast_math is True and opts.launch_timeout_s == 3.0
    assert opts.peak_bandwidth_gbs == {"cpu": 20.0}
    assert RuntimeOptions.from_dict(opts.to_dict()) == opts
    assert load_runtime_options(tmp_path, {"mode": "debug"}).mode == "debug"


@pytest.mark.parametrize(
    "bad",
    [{"devices": ["tpu"]}, {"mode": "fast"}, {"fast_math": "yes"}, {"timeout_s": 0}, {"memory_mb": True}],
)
def test_bad_values_are_config_errors(bad: dict) -> None:
    with pytest.raises(ConfigError):
        RuntimeOptions().merged(bad)


def test_discovery(tmp_path: Path) -> None:
    k = tmp_path / "k.py"
    k.write_text("import warp as wp\n\n@wp.kernel\ndef f(a: wp.array(dtype=float)):\n    pass\n")
    c = tmp_path / "k_contract.py"
    c.write_text("from warp_harness.contract import Contract\n")
    plain = tmp_path / "plain.py"
    plain.write_text("print('hi')\n")
    swap = tmp_path / ".k.py.swp"
    swap.write_text("")
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "hook.py").write_text("@wp.kernel\n")
    assert has_kernels(k.read_text()) and not has_kernels(plain.read_text())
    assert relevant(k) == k and relevant(c) == k and relevant(plain) is None and relevant(swap) is None
    assert kernel_module_for(c) == k and contract_siblings(k) == [c]
    assert list(walk([tmp_path])) == [k.resolve()]
