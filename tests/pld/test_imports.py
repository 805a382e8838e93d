"""privloss.pld and privloss.fdp must not import the accountant (it imports them)."""

import subprocess
import sys


def test_no_accounting_import():
    code = ("import sys, privloss.pld, privloss.fdp, privloss.fdp.convert, privloss.pld.compose;"
            "bad = sorted(m for m in sys.modules if m.startswith('privloss.accounting') or m == 'matplotlib');"
            "print(bad); sys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
