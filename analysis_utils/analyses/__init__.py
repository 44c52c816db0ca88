"""Pure analyses over attention arrays, one module per paper section: ``surface`` and
``gradients`` (Clark §3), ``syntax`` (§4.2), ``coref`` (§4.3), ``probes``, ``probe_data`` and
``trees`` (§5), ``clustering`` (§6), ``maptypes`` (Kovaleva §4.1)."""
