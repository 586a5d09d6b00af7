"""A user's YAML document read into checked values: the ground floor of the core, importing none of it.

- `fields`: the field reader that collects every problem with its field path (`Fields`, `Problem`, `SpecError`),
  the bounds and patterns of typed fields, `deep_merge`.
- `yamlload`: bounded YAML loading of a campaign, a catalog, an `extends` parent or an inline spec (size, depth,
  duplicate keys, finite numbers).
"""
