"""The `--library librdkafka|kafka-python` option the TLS clients share."""


def take_library(args):
    """Removes `--library NAME` from `args` (a list); returns NAME, or librdkafka."""
    if "--library" not in args:
        return "librdkafka"
    i = args.index("--library")
    name = args[i + 1]
    del args[i : i + 2]
    return name
