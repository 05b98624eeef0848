"""Glasshouse v0.1's published files: commit, SHA-256 of every file, tiers, question sets, and
fetching them from the data directory or a local copy."""

from __future__ import annotations

from pathlib import Path

from recallbench.benchmarks.glasshouse.options import GlasshouseOptions
from recallbench.datasets.dataset import DatasetOptions, FileRecord, FileSpec
from recallbench.datasets.fetch import ensure_file, sha256_file
from recallbench.errors import DataFileError, OptionError

NAME = "glasshouse-v0.1"


COMMIT = "2eeb19eaa587dfa9685a9bdcaec6a9a397a8c109"


VERSION = f"0.1-{COMMIT[:7]}"


REPOSITORY = "https://github.com/wontopos/glasshouse"


BASE_URL = f"https://raw.githubusercontent.com/wontopos/glasshouse/{COMMIT}/glasshouse-v0.1/"


TIERS: tuple[str, ...] = ("core", "small", "medium", "full")


TIER_TURNS: dict[str, int] = {"core": 1882, "small": 7186, "medium": 12884, "full": 103572}


QUESTION_SETS: tuple[str, ...] = ("tier", "xling", "probes")


XLING_FILE = "questions_xling.jsonl"


PROBES_FILE = "glasshouse_v0.1_probes.jsonl"


HASHES: dict[str, str] = {
    "glasshouse_v0.1_core.jsonl": (
        "77161944faf03f10c5764ee653f2fbc7f62c47d951d12674c83b6be8ad01560f"
    ),
    "glasshouse_v0.1_small.jsonl": (
        "08a5029f6d8df955da64f7882207fec47474e0282a8ab1cb752ff0d90500490f"
    ),
    "glasshouse_v0.1_medium.jsonl": (
        "ee1240a9b608818543cb6147fa05019b9b5523e4cafd3d3a7c4fa90c44fbd74a"
    ),
    "glasshouse_v0.1_full.jsonl": (
        "87ae8339dbfe290f7936919202ce9536c856bbb2d9aff25d23d51d3e97a9dfcf"
    ),
    "questions_core.jsonl": "019a19f6dffb54daa6fc9bc598b398e2009a7c8dd7b63844adb2fbc3069d59db",
    "questions_small.jsonl": "32481ecf45ac38e8f1ca5fbf83cb8a99d930b85d2f3f4590538c2a7d352dace8",
    "questions_medium.jsonl": "19308510cd70c590707463e0638a4e8a7a8aff22dd067a8c927e236ab2b5974a",
    "questions_full.jsonl": "d2b4c2fb82ab7cb8997e44c290361e9e373a379ba24a536de4b201fb57ff22d3",
    "questions_xling.jsonl": "9a4de90996bbd0a941ae44fb4fb0932ab859edd383e5c33e29c6286a6ad0f734",
    "glasshouse_v0.1_probes.jsonl": (
        "3e799a0294fbfccc22c1cc86e0b80447bf24f2f12faa10db7949ae01c788a7af"
    ),
    "img/img01.png": "3bcfab9af51b68d3a67e05263391bb0ffc7e0e25db1709bbeaee81525bb329bf",
    "img/img02.png": "3ad3eb6e4b27793be0f6453fd1c42d15102eee45b6b8e346e508250588ad3dbb",
    "img/img03.png": "424e4d6dc16f9d6f0755f67029586e71aeb35483c70bcaace62d6415683adf11",
    "img/img04.png": "f8fab5459c7ae58de7f6741aa6295ff3f77ee72fe8f7792192c635bc4eb0c25c",
    "img/img05.png": "737682db25efa75dcd629ceae57aa3ffc4dac0351a0b2be13e0a5be494b14916",
    "img/img06.png": "1654671d4c9d6c12befab022caddcee2ec8fd91618c67ae9843526cd7bdb8a54",
    "img/img07.png": "f2072a8099734a05abffbbaf6ae63ec13ed7d5f40b5568c182b110a7db9e48b8",
    "img/img08.png": "721aeaee9e97fff8342f5de07fdbf7efd88c834bbdbb774352ca65447413e207",
    "img/img09.png": "02a452fff04b84fc8c10658a73ff932a607a9de371d49f09f0394aea416cc484",
    "img/img10.png": "66c5d29a7095b4f8c45ad452138d9c591acb6c3ec58c1690a4c45efe611ce5cb",
    "img/img11.png": "f2c81ea980b1e363e9d6c94db49eea9d85ebc493cfb6e7faa2b39939319f19ad",
    "img/img12.png": "e9e8bdcd8602fb745cfbbd0d8c92663951c0c954ab506648679caaf58a294b00",
    "img/img13.png": "b3c8a97d7ce49e01fa66b78fd2301f394f7c2556a56dbb84f91d22b0f77f51da",
    "img/img14.png": "2b1255f648cc5abbe0fc77b08a466b8386c675d874efdba63816ff25bcf8566a",
    "img/img15.png": "8b57447bbd4395de92b764855717020c0f9da632105a94f9eee2bafca1dd86ff",
    "img/img16.png": "5d2501282da72ff3754ac14cc21d0f43c669aa6f81c998c34b1bbc7fa8b0295a",
    "img/img17.png": "73cbafe43bf0cceb952bcb59879204ba2aa4f2778f411be98b013058cf82ddfb",
    "img/img18.png": "c4f7b5a36b175a2e81232797feb72512115b6d8851071f2f36c98bbe45cb39b2",
    "img/img19.png": "c7249b185c6a85967decb6fc3cef0544cae8185f9c43f84cb01f11edd6725ec0",
    "img/img20.png": "7417200ad73637e2c5688b325db644c0f30678e006b6e22748d01c56eb9af520",
    "img/img21.png": "f622a23830982cc72e89f959df44a2094e682ca69ebb5e421e4a876d0a9c8ce3",
    "img/img22.png": "bf03c7466692aaea803df78115c0f75b121b0dc9d36053bd43afd60fa64ebe92",
    "img/img23.png": "6abab03e5a6b462b55577a914daa7c9a4c47a6a50b5d738234c453d72d8e5ec6",
    "img/img24.png": "f2d7b4546a4c5b3df34f85510a0f849889f6a842f02c34ebfc428dd903e0affa",
    "img/img25.png": "62b108c532bcc6ed777563902e007f4a9218db636c313394645713e23b7654df",
    "img/img26.png": "6ecd59ed6433507e9bebba4ac651fde3db1a58a996074c62afb5a5611dac3e66",
    "img/img27.png": "6b71ad2751c2305035d5b03ff48b9a27697a4e18c946e30500c770397ee9f474",
    "img/img28.png": "6725eaf12bd48b124e8889046468b0f0de8fbdd54049725e3aad25dffc7ebaa8",
    "img/img29.png": "08fb22dba6d3c52c51368234f48904a11050b4159f9c40df5206b78f9a9959c4",
    "img/img30.png": "d38b22035a904f64d4b02ce53a4cf179801103db7fc78e090f1cdc3b6928d0f5",
    "img/img31.png": "ae4476d546eaf7b7bf4e3691a4ab27f1998efb3e8f98cea3ec3639c0c1f76112",
    "img/img32.png": "d2c29672c1458877e02400b9171ed21afaa2397f8a1ebf9929999712791d3bd9",
    "img/img33.png": "535523341f86040db975f7f2fb0b81ae85eb8498f758111982bcbe65bba1fe2c",
    "img/img34.png": "281c4c41ebb2b2dc04feaa80bb122fdc1429f70d3d8d04f0aa4ea44ceabce844",
    "img/img35.png": "1f776bf232b5ed6f8ef0812d32e4913e84bfaedf72819642ea84d89cbdf0f9f1",
    "img/img36.png": "3ef2345cfe071b7bba778d3fec296e4df8ad0870248f8a286151b078975bf9cb",
    "img/img37.png": "2e21516a98af6f07130ecb503e5476b5831d9f2ad8d31a17fd24d4fb86cf8b65",
    "img/img38.png": "edc40fd343d50b20c4f141db501ea51662861a4a5a19c97a9b5b310f6ec015f6",
    "img/img39.png": "6257d03b99ee660fdfc5e7f55c584e12b0208dce80191b1cf4bd73588bdc0cd7",
    "img/img40.png": "a9e9b15ceec069e1cdd8f00de48446b958a58cbae27f296198dfcfbc989a90f7",
    "img/img41.png": "d98521be2f4e5ae241d3515c745c0042a4e7d3e215632ca5b09e455c466a382e",
    "img/img42.png": "6f3ef4c22b3e61d9f576f56469061aebe7106c9283b4f5e305c78fc741dd39d3",
    "img/img43.png": "438191241f3d58a688afedd3360d73609e07ae04a9b0e91dbb27ee8d6865b9d5",
    "img/img44.png": "2084966ddb7539213ccb069139f849ad9d8431ef1f734a9154e1566da822b14a",
    "img/img45.png": "e2c6eb2d03d0064b483bb25dc2b1f4f74065e89af9ee2e17c9eec9c3b03f120f",
    "img/img46.png": "20de09769bec255fb2f2f049b9b7651e2349205d87d42c035286c383b5eee539",
    "img/img47.png": "6679f8994e024f14d8cc9b69003f1c13d2f5f0a74d07afd921d88deae8a8e6a7",
    "img/img48.png": "2da70e30f4fb48981bf4fa6e491bf4fb70b9690d05c69c3d72be72406929bc61",
    "img/img49.png": "ac92b2c36a7146f3d9024bdaaf9bcb04c83472f8aa8fa1d3cbdf8bde11996b82",
    "img/img50.png": "bcdbd309968802c1513214a17aacbaa2b9d3cbaf21102d2ea342bb39e7b5cf15",
}


class GlasshouseOptionError(OptionError):
    """An option combination Glasshouse does not allow (the message says what to do)."""


def corpus_file(tier: str) -> str:
    return f"glasshouse_v0.1_{tier}.jsonl"


def questions_file(tier: str) -> str:
    return f"questions_{tier}.jsonl"


def file_spec(name: str) -> FileSpec:
    """The pinned published file ``name`` (a path inside ``glasshouse-v0.1/``)."""
    return FileSpec(name, HASHES[name], BASE_URL + name)


def question_set(options: DatasetOptions | None, tier: str) -> str:
    """``tier``, ``xling`` or ``probes`` from ``options.questions``; refuses other tiers."""
    raw = options.questions if isinstance(options, GlasshouseOptions) else None
    chosen = "tier" if raw in (None, "") else str(raw).strip().lower()
    if chosen in ("tier", tier):
        return "tier"
    if chosen in TIERS:
        raise GlasshouseOptionError(
            f"{NAME}: {questions_file(chosen)} belongs to the {chosen} tier, but the corpus is "
            f"the {tier} tier. turn_id restarts in every tier, so its evidence ids would point "
            f"at the wrong turns. Use --questions tier (or {tier}), or choose the "
            f"{chosen} tier."
        )
    if chosen not in QUESTION_SETS:
        raise GlasshouseOptionError(
            f"{NAME}: unknown question set {raw!r}; choose tier, xling, probes "
            f"(or a tier name: {', '.join(TIERS)})"
        )
    if chosen == "xling" and tier == "core":
        raise GlasshouseOptionError(
            f"{NAME}: the cross-language questions need the small tier or larger: core has no "
            "foreign-language sessions and no photographs, so they cannot be asked of it. "
            "Choose glasshouse-v0.1:small, :medium or :full."
        )
    return chosen


def question_set_label(tier: str, qset: str) -> str:
    """The name of a question set in file names and ``--questions``: the tier, xling, probes."""
    return tier if qset == "tier" else qset


def question_files(tier: str, qset: str) -> tuple[str, ...]:
    if qset == "xling":
        return (XLING_FILE, questions_file(tier))  # the tier's file lends evidence turns
    if qset == "probes":
        return (PROBES_FILE,)
    return (questions_file(tier),)


def variant_files(variant: str, options: DatasetOptions | None = None) -> tuple[FileSpec, ...]:
    tier = variant or "core"
    if tier not in TIERS:
        return ()
    names = [corpus_file(tier), questions_file(tier), PROBES_FILE]
    if tier != "core":
        names.append(XLING_FILE)
    if isinstance(options, GlasshouseOptions) and options.questions:
        names += question_files(tier, question_set(options, tier))
    return tuple(file_spec(n) for n in dict.fromkeys(names))


class _Files:
    """Fetches and verifies files from the data directory (pinned) or a local copy."""

    def __init__(self, data_dir: Path, local_path: Path | None) -> None:
        self.data_dir = data_dir
        self.local_path = local_path
        self.records: dict[str, FileRecord] = {}

    @property
    def folder(self) -> Path:
        return self.local_path if self.local_path is not None else self.data_dir / NAME

    def present(self, name: str) -> bool:
        return (self.folder / name).exists()

    def get(self, name: str) -> Path:
        spec = file_spec(name)
        if self.local_path is not None:
            path = self.local_path / name
            if not path.exists():
                raise DataFileError(
                    f"{path} is missing: {NAME} needs {name} (published at {spec.url})"
                )
            actual = sha256_file(path)
            pinned = actual == spec.sha256
            note = None if pinned else "local file, not the pinned release"
            self.records[name] = FileRecord(name, actual, pinned=pinned, note=note)
            return path
        path, record = ensure_file(NAME, spec, self.data_dir)
        self.records[name] = record
        return path


def _corpus_missing(exc: DataFileError, files: _Files, tier: str) -> DataFileError:
    name = corpus_file(tier)
    spec = file_spec(name)
    return DataFileError(
        f"{NAME}:{tier} needs the {tier} corpus {name} ({TIER_TURNS[tier]:,} turns), which is "
        f"not in {files.folder} and could not be fetched from {spec.url} (SHA-256 "
        f"{spec.sha256}). Download it there, or run a tier whose corpus is present. "
        f"Cause: {exc}"
    )
