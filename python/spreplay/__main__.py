"""`python -m spreplay ...`: the spreplay tool, for scripts that want the one
installed with this interpreter."""

from ._cli import main

main()
