"""The policy advisor, host side (docs/advise.md): what each remat policy would save and
recompute at a site, measured by the trace agent on the site's example.

`request` asks the agent (`advise`, `submit_advise`) and finds a site's example; `advice` is
the answer (`Advice`, its JSON contract); `report` writes it for people."""
