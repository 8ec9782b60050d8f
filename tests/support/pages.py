"""Pages for the dedup tests and benchmarks: many pages sharing one span (a hot key)."""
from pipelines.page import Page

HOT = "Hot span first sentence. Hot span second sentence. Hot span third sentence."


def hot_span_pages(count, shared=True):
    """`count` pages that all hold the same span (a hot key), each with a sentence of its own
    before and after it; the last page holds it twice. With `shared` False, each page's span
    is its own (the same volume without the hot key)."""
    pages = []
    for i in range(count):
        hot = HOT if shared else HOT.replace("Hot", f"Page {i} hot")
        text = f"Page {i} starts here. {hot}\nPage {i} ends here."
        if i == count - 1:
            text += f"\n{hot}"
        pages.append(Page(url=f"https://site{i}.com/p", normalized_url=f"site{i}.com/p",
                          timestamp="2019-04-18T10:13:24Z", content_type="text/plain",
                          content_length=len(text), text=text))
    return pages
