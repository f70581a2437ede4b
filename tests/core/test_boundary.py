"""The kit stands alone: importing it pulls in nothing from Django or the apps."""

import subprocess
import sys


def test_core_and_providers_import_without_django():
    code = (
        "import sys, orkestrel.core, orkestrel.providers;"
        "bad = [m for m in sys.modules if m.split('.')[0] in "
        "{'django', 'rest_framework', 'channels', 'agents', 'conversations', 'workspaces'}];"
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr
