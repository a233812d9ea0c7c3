# conformance/: filled in by its module
