// Python frames that are no one's code: the machinery that runs the user's code, and the files
// IPython writes for a notebook's cells (docs/attribution.md, "Notebooks and machinery").
#pragma once

#include <string>
#include <string_view>

namespace memsnap::analysis {

/// Whether a Python file is machinery that runs the user's code (IPython, ipykernel and Jupyter's
/// stack, runpy, threading, asyncio, concurrent.futures...): never shown as a caller.
bool IsPythonMachineryPath(std::string_view path);

/// Whether a Python file is a model library's code (transformers, peft, diffusers, timm,
/// accelerate, bitsandbytes' nn modules, torchvision's models...): installed code that defines the
/// model's layers, named in labels as the model code it is (docs/attribution.md, "Model
/// libraries").
bool IsModelLibraryPath(std::string_view path);

/// A notebook cell's name for a Python file IPython wrote for it, "" for other files: "cell [21]"
/// for `<ipython-input-21-3105878423>` (21 is the cell's execution count), "cell 3105878423.py"
/// for ipykernel's `/tmp/ipykernel_PID/3105878423.py` (a hash of the cell's code: the count is in
/// neither the name nor any frame).
std::string NotebookCellName(std::string_view path);

}  // namespace memsnap::analysis
