"""Export: a checkpoint written out in another inference engine's format (CTranslate2), with the
tokenizers and a manifest beside it, so that the exported directory translates on its own."""
