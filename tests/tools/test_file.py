import gzip
from pathlib import Path

import pytest

from tests import configured
from tests.providers.images import gif, jpeg, png, webp_extended, webp_lossless, webp_lossy
from tools import file as file_tool
from tools import file_actions
from tools.base import Danger
from tools.file import FileArgs
from tools.registry import execute
from tools.shell import OUTPUT_CAP_CHARS


@pytest.fixture
def ws(tmp_path) -> Path:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    return workspace


@pytest.fixture
def outside(tmp_path) -> Path:
    directory = tmp_path / "outside"
    directory.mkdir()
    (directory / "secret.txt").write_text("SECRET token\n")
    return directory


async def _file(ws: Path, **kwargs):
    return await file_tool.TOOL.handler(FileArgs(**kwargs), configured.tool_context(workspace=ws))


# --- read -------------------------------------------------------------------


async def test_file_read_returns_the_text(ws):
    (ws / "a.txt").write_text("one\ntwo\n")
    result = await _file(ws, action="read", path="a.txt")
    assert result.status == "ok" and result.content == "one\ntwo\n"


async def test_file_read_accepts_an_absolute_path_inside_the_workspace(ws):
    (ws / "a.txt").write_text("inside\n")
    result = await _file(ws, action="read", path=str(ws / "a.txt"))
    assert result.content == "inside\n"


async def test_file_read_selects_lines_with_offset_and_limit(ws):
    (ws / "a.txt").write_text("".join(f"line{i}\n" for i in range(1, 11)))
    result = await _file(ws, action="read", path="a.txt", offset=3, limit=2)
    assert result.content == "line3\nline4\n"
    tail = await _file(ws, action="read", path="a.txt", offset=9)
    assert tail.content == "line9\nline10\n"


async def test_file_read_refuses_an_offset_past_the_end(ws):
    (ws / "a.txt").write_text("only\n")
    result = await _file(ws, action="read", path="a.txt", offset=5)
    assert result.status == "error" and "(1 lines)" in result.content


async def test_file_read_of_a_missing_file_is_an_error(ws):
    result = await _file(ws, action="read", path="nope.txt")
    assert result.status == "error" and result.content == "no such file: nope.txt"


async def test_file_read_refuses_a_binary_file(ws):
    (ws / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    result = await _file(ws, action="read", path="blob.bin")
    assert result.status == "error" and "binary" in result.content


async def test_file_read_names_a_compressed_file_with_a_text_name_by_type_and_size(ws):
    """An attachment saved as notes.txt that is a gzip or a PDF: before issue 41 the gzip was
    "a binary file" (what and how large unsaid) and the PDF, no NUL in its start, was decoded
    into the context as text."""
    gz = gzip.compress(b"notes, many notes\n" * 400, mtime=1)
    pdf = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj <</Type /Catalog>> endobj\n" * 20
    for data, kind in ((gz, "gzip-compressed data"), (pdf, "a PDF document")):
        (ws / "notes.txt").write_bytes(data)
        result = await _file(ws, action="read", path="notes.txt")
        assert result.status == "error"
        assert result.content == f"'notes.txt' is a binary file ({kind}, {len(data)} bytes); it cannot be read as text"


async def test_file_read_truncates_at_whole_lines_and_says_how_to_read_on(ws):
    # 5000 lines of 11 characters each
    (ws / "big.txt").write_text("".join(f"line {i:05d}\n" for i in range(1, 5001)))
    result = await _file(ws, action="read", path="big.txt")
    assert result.truncated
    shown = OUTPUT_CAP_CHARS // 11
    assert result.content.endswith(
        f"line {shown:05d}\n[output capped at {OUTPUT_CAP_CHARS} characters: "
        f"showed lines 1-{shown} of 5000; use offset={shown + 1} (and limit) to read on]"
    )
    following = await _file(ws, action="read", path="big.txt", offset=shown + 1, limit=1)
    assert following.content == f"line {shown + 1:05d}\n"


async def test_file_read_cuts_a_single_line_longer_than_the_cap(ws):
    (ws / "min.js").write_text("x" * 30_000)
    result = await _file(ws, action="read", path="min.js")
    assert result.truncated
    assert result.content.startswith("x" * OUTPUT_CAP_CHARS + "\n[line 1 is longer than")


# --- confinement --------------------------------------------------------------


async def test_file_read_refuses_a_parent_path(ws, outside):
    result = await _file(ws, action="read", path="../outside/secret.txt")
    assert result.status == "error"
    assert result.content == "path '../outside/secret.txt' is outside the workspace"


async def test_file_write_refuses_a_parent_path_and_writes_nothing(ws, outside):
    result = await _file(ws, action="write", path="../outside/new.txt", content="x")
    assert result.status == "error" and "outside the workspace" in result.content
    assert not (outside / "new.txt").exists()


async def test_file_read_refuses_an_absolute_path_outside_the_workspace(ws):
    result = await _file(ws, action="read", path="/etc/passwd")
    assert result.status == "error" and "outside the workspace" in result.content


async def test_file_read_refuses_symlink_pointing_outside_workspace(ws):
    (ws / "etc").symlink_to("/etc")
    for action in ("read", "list"):
        path = "etc/passwd" if action == "read" else "etc"
        result = await _file(ws, action=action, path=path)
        assert result.status == "error" and "outside the workspace" in result.content


async def test_file_grep_skips_files_symlinked_from_outside(ws, outside):
    (ws / "leak.txt").symlink_to(outside / "secret.txt")
    (ws / "own.txt").write_text("no token here\n")
    result = await _file(ws, action="grep", pattern="SECRET")
    assert result.content == "no matches for 'SECRET' in ."


# --- write and edit -----------------------------------------------------------


async def test_file_write_creates_parent_directories_and_reports_bytes(ws):
    result = await _file(ws, action="write", path="src/pkg/mod.py", content="print('é')\n")
    assert (ws / "src/pkg/mod.py").read_text() == "print('é')\n"
    assert result.content == "Wrote 12 bytes to src/pkg/mod.py."


async def test_file_edit_replaces_a_unique_string(ws):
    (ws / "a.py").write_text("x = 1\ny = 2\n")
    result = await _file(ws, action="edit", path="a.py", old="y = 2", new="y = 3")
    assert result.status == "ok" and result.content == "Made 1 replacement in a.py."
    assert (ws / "a.py").read_text() == "x = 1\ny = 3\n"


async def test_file_edit_keeps_windows_line_endings(ws):
    (ws / "a.txt").write_bytes(b"one\r\ntwo\r\n")
    await _file(ws, action="edit", path="a.txt", old="two", new="three")
    assert (ws / "a.txt").read_bytes() == b"one\r\nthree\r\n"


async def test_file_edit_of_a_missing_string_is_an_error_and_changes_nothing(ws):
    (ws / "a.py").write_text("x = 1\n")
    result = await _file(ws, action="edit", path="a.py", old="x=1", new="x = 2")
    assert result.status == "error" and "not found" in result.content
    assert (ws / "a.py").read_text() == "x = 1\n"


async def test_file_edit_of_an_ambiguous_string_is_an_error_unless_replace_all(ws):
    (ws / "a.py").write_text("a = 0\na = 0\n")
    result = await _file(ws, action="edit", path="a.py", old="a = 0", new="a = 1")
    assert result.status == "error"
    assert "found 2 times" in result.content and "replace_all" in result.content
    assert (ws / "a.py").read_text() == "a = 0\na = 0\n"
    result = await _file(ws, action="edit", path="a.py", old="a = 0", new="a = 1", replace_all=True)
    assert result.content == "Made 2 replacements in a.py."
    assert (ws / "a.py").read_text() == "a = 1\na = 1\n"


async def test_file_edit_of_a_missing_file_is_an_error(ws):
    result = await _file(ws, action="edit", path="gone.py", old="a", new="b")
    assert result.status == "error" and result.content == "no such file: gone.py"


# --- list and grep -------------------------------------------------------------


async def test_file_list_shows_sorted_entries_with_directories_marked(ws):
    (ws / "src").mkdir()
    (ws / "b.txt").write_text("")
    (ws / "a.txt").write_text("")
    (ws / "src" / "deep.txt").write_text("")
    result = await _file(ws, action="list")
    assert result.content == "a.txt\nb.txt\nsrc/"


async def test_file_list_caps_the_number_of_entries(ws):
    for i in range(1005):
        (ws / f"f{i:04d}").write_text("")
    result = await _file(ws, action="list")
    lines = result.content.splitlines()
    assert len(lines) == 1001 and lines[-1] == "[... 5 more entries not shown]"
    assert result.truncated


async def test_file_list_of_a_file_is_an_error(ws):
    (ws / "a.txt").write_text("")
    result = await _file(ws, action="list", path="a.txt")
    assert result.status == "error" and "not a directory" in result.content


async def test_file_grep_finds_matches_recursively_skipping_git_and_binaries(ws):
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("import os\ndef main():\n    return os.getcwd()\n")
    (ws / "README").write_text("call main() to start\n")
    (ws / ".git").mkdir()
    (ws / ".git" / "HEAD").write_text("main\n")
    (ws / "data.bin").write_bytes(b"main\x00\x00")
    result = await _file(ws, action="grep", pattern=r"main\(\)")
    assert result.content == "README:1:call main() to start\nsrc/app.py:2:def main():"


async def test_file_grep_searches_a_single_file(ws):
    (ws / "a.txt").write_text("alpha\nbeta\nalphabet\n")
    result = await _file(ws, action="grep", path="a.txt", pattern="^alpha")
    assert result.content == "a.txt:1:alpha\na.txt:3:alphabet"


async def test_file_grep_caps_the_number_of_matches(ws):
    (ws / "many.txt").write_text("hit\n" * 500)
    result = await _file(ws, action="grep", pattern="hit")
    lines = result.content.splitlines()
    assert len(lines) == 201 and lines[-1].startswith("[stopped at 200 matches")
    assert result.truncated


async def test_file_grep_reports_an_invalid_regex(ws):
    result = await _file(ws, action="grep", pattern="(unclosed")
    assert result.status == "error"
    assert "invalid regex '(unclosed'" in result.content and "missing )" in result.content


# --- validation and policy ---------------------------------------------------------


async def test_file_write_without_content_asks_for_a_retry(ws):
    result = await execute("file", {"action": "write", "path": "a.txt"}, configured.tool_context(workspace=ws))
    assert result.status == "retry" and "action 'write' needs content" in result.content
    assert not (ws / "a.txt").exists()


async def test_file_read_with_a_zero_offset_asks_for_a_retry(ws):
    arguments = {"action": "read", "path": "a", "offset": "0"}
    result = await execute("file", arguments, configured.tool_context(workspace=ws))
    assert result.status == "retry" and "offset" in result.content


@pytest.mark.parametrize(
    "action, danger",
    [("read", Danger.SAFE), ("list", Danger.SAFE), ("grep", Danger.SAFE),
     ("write", Danger.MODERATE), ("edit", Danger.MODERATE)],
)
def test_file_classifies_writes_as_moderate_and_reads_as_safe(action, danger):
    args = FileArgs.model_validate({"action": action, "content": "x", "old": "a", "new": "b", "pattern": "p"})
    assert file_tool.TOOL.classify is not None and file_tool.TOOL.classify(args) is danger


def test_file_compacts_on_action_and_path():
    assert file_tool.TOOL.compact_keys == ("action", "path")


async def test_file_names_that_are_not_utf8_are_listed_and_grepped_escaped(ws):
    import os

    (Path(os.fsdecode(bytes(ws) + b"/bad\xff\xfe.txt"))).write_bytes(b"needle\n")
    os.mkdir(bytes(ws) + b"/dir\xff")
    (Path(os.fsdecode(bytes(ws) + b"/dir\xff/x.txt"))).write_text("needle\n")
    listed = await _file(ws, action="list")
    grepped = await _file(ws, action="grep", pattern="needle")
    assert listed.status == "ok" and listed.content == "bad\\xff\\xfe.txt\ndir\\xff/"
    assert grepped.status == "ok" and grepped.content == "bad\\xff\\xfe.txt:1:needle\ndir\\xff/x.txt:1:needle"
    listed.model_dump_json()  # a payload Temporal can carry: no lone surrogates
    grepped.model_dump_json()


# --- images -------------------------------------------------------------------


@pytest.mark.parametrize(("name", "data", "media_type", "size"), [
    ("shot.png", png(640, 480), "image/png", (640, 480)),
    ("photo.jpg", jpeg(800, 600), "image/jpeg", (800, 600)),
    ("anim.gif", gif(5, 7), "image/gif", (5, 7)),
    ("lossless.webp", webp_lossless(9, 4), "image/webp", (9, 4)),
    ("lossy.webp", webp_lossy(33, 17), "image/webp", (33, 17)),
    ("extended.webp", webp_extended(1000, 700), "image/webp", (1000, 700)),
], ids=lambda v: v if isinstance(v, str) else None)
async def test_file_read_of_an_image_gives_the_image_and_says_what_it_is(ws, name, data, media_type, size):
    import base64

    (ws / name).write_bytes(data)
    result = await _file(ws, action="read", path=name)
    assert result.status == "ok" and result.image is not None
    assert result.image.media_type == media_type and (result.image.width, result.image.height) == size
    assert result.image.size == len(data) and base64.b64decode(result.image.data or "") == data
    assert result.image.digest == ""  # the tool activity stores the bytes and names the blob
    shown = f"{len(data)} bytes" if len(data) < 1024 else f"{round(len(data) / 1024)} KB"
    assert result.content == f"Image {name}: {media_type}, {size[0]}x{size[1]}, {shown}"
    assert "data" not in result.model_dump()["image"]  # the bytes never travel in a payload


async def test_file_read_of_an_image_says_its_size_in_kilobytes(ws):
    data = png(2, 2) + b"\0" * 52 * 1024  # trailing bytes after IEND: still a PNG by its header
    (ws / "big.png").write_bytes(data)
    result = await _file(ws, action="read", path="big.png")
    assert result.content == "Image big.png: image/png, 2x2, 52 KB" and result.image is not None


async def test_an_image_is_known_by_its_bytes_not_its_name(ws):
    (ws / "picture.txt").write_bytes(png(3, 3))
    (ws / "fake.png").write_text("not an image at all\n")
    (ws / "blob.png").write_bytes(b"\x00\x01binary, but no image\x00")
    real = await _file(ws, action="read", path="picture.txt")
    fake = await _file(ws, action="read", path="fake.png")
    blob = await _file(ws, action="read", path="blob.png")
    assert real.image is not None and real.image.media_type == "image/png"
    assert fake.image is None and fake.content == "not an image at all\n"
    assert blob.image is None and blob.status == "error" and "binary" in blob.content


async def test_an_image_over_the_limit_is_described_not_sent(ws, monkeypatch):
    monkeypatch.setattr(file_actions, "MAX_IMAGE_BYTES", 1000)
    (ws / "huge.jpg").write_bytes(jpeg(4000, 3000) + b"\0" * 3000)
    result = await _file(ws, action="read", path="huge.jpg")
    assert result.status == "ok" and result.image is None
    assert result.content.startswith("Image huge.jpg: image/jpeg, 4000x3000, 3 KB: too large to show (over 1000 bytes)")


async def test_an_image_with_an_unreadable_header_is_sent_without_its_size(ws):
    (ws / "odd.jpg").write_bytes(b"\xff\xd8\xff\xe0\x00")  # the magic, then nothing sensible
    result = await _file(ws, action="read", path="odd.jpg")
    assert result.image is not None and (result.image.width, result.image.height) == (None, None)
    assert result.content == "Image odd.jpg: image/jpeg, 5 bytes"
