# tools/fuzz: filled in by its module
