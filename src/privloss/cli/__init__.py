"""The ``privloss`` command line: one module per command group."""
