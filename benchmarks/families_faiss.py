"""The index-family benchmark's configurations, and each one built with faiss directly.

``families`` holds, per index type, the Milvus build parameters, the search
parameter swept to reach the target recall, its values, the fixed search
parameters, and for the refining kinds the re-scoring depth (``refine_k`` or
``reorder_k``) deepened when the sweep tops out below the target
(``settings``: every combination, shallowest first). ``direct`` builds the same index
with faiss in this process (no Strata code): the bound Strata's wrapper is
measured against. HNSW_PQ and HNSW_PRQ are built by faiss the plain way
(their graphs linked over the codes), Strata links them over the floats as
knowhere does; both are then searched the same way.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import faiss
import numpy as np

NPROBES = (1, 2, 4, 8, 16, 32, 64, 128, 256)
EFS = (16, 32, 64, 128, 256, 512, 1024)
REFINE_KS = (2.0, 4.0, 8.0, 16.0)
REORDER_KS = (100, 200, 400, 800)


@dataclass(frozen=True, slots=True, kw_only=True)
class Family:
    index_type: str
    build: dict[str, Any]
    sweep: str  # "nprobe" or "ef"
    values: tuple[int, ...]
    fixed: dict[str, Any] = field(default_factory=dict)
    deepen: tuple[str, tuple[float, ...]] | None = None  # a re-scoring depth and its values, shallowest first

    def settings(self) -> list[dict[str, Any]]:
        """Search parameters to try in order: the sweep, then the sweep again one depth deeper."""
        depths: list[dict[str, Any]] = [{}]
        if self.deepen is not None:
            name, values = self.deepen
            depths = [{name: v} for v in values]
        return [{self.sweep: value, **self.fixed, **depth} for depth in depths for value in self.values]


def families(nlist: int, m: int, graph_m: int, ef_construction: int) -> dict[str, Family]:
    graph = {"M": graph_m, "efConstruction": ef_construction}
    return {
        "IVF_FLAT": Family(index_type="IVF_FLAT", build={"nlist": nlist}, sweep="nprobe", values=NPROBES),
        "IVF_SQ8": Family(index_type="IVF_SQ8", build={"nlist": nlist}, sweep="nprobe", values=NPROBES),
        "IVF_PQ": Family(index_type="IVF_PQ", build={"nlist": nlist, "m": m, "nbits": 8}, sweep="nprobe",
                         values=NPROBES),
        "IVF_RABITQ": Family(index_type="IVF_RABITQ", build={"nlist": nlist, "refine": True, "refine_type": "SQ8"},
                             sweep="nprobe", values=NPROBES, fixed={"rbq_query_bits": 0},
                             deepen=("refine_k", REFINE_KS)),
        "SCANN": Family(index_type="SCANN", build={"nlist": nlist}, sweep="nprobe", values=NPROBES,
                        deepen=("reorder_k", REORDER_KS)),
        "HNSW_SQ": Family(index_type="HNSW_SQ", build={**graph, "sq_type": "SQ8", "refine": True, "refine_type": "FP32"},
                          sweep="ef", values=EFS, deepen=("refine_k", (1.0, *REFINE_KS))),
        "HNSW_PQ": Family(index_type="HNSW_PQ", build={**graph, "m": m, "refine": True, "refine_type": "FP32"},
                          sweep="ef", values=EFS, deepen=("refine_k", REFINE_KS)),
        "HNSW_PRQ": Family(index_type="HNSW_PRQ", build={**graph, "m": m // 2, "nrq": 2, "nbits": 8, "refine": True,
                                                         "refine_type": "FP32"},
                           sweep="ef", values=EFS, deepen=("refine_k", REFINE_KS)),
    }


class Direct:
    """A faiss index built without Strata, and how to search it with a swept value."""

    def __init__(self, family: Family, base: np.ndarray) -> None:
        self.family = family
        self._parts: list[Any] = []  # objects the index or the parameters point to
        dim = base.shape[1]
        b = family.build
        mt = faiss.METRIC_L2
        match family.index_type:
            case "IVF_FLAT" | "IVF_SQ8" | "IVF_PQ" | "SCANN":
                quantizer = faiss.IndexFlat(dim, mt)
                self._parts.append(quantizer)
                nlist = b["nlist"]
                inner = {
                    "IVF_FLAT": lambda: faiss.IndexIVFFlat(quantizer, dim, nlist, mt),
                    "IVF_SQ8": lambda: faiss.IndexIVFScalarQuantizer(quantizer, dim, nlist,
                                                                     faiss.ScalarQuantizer.QT_8bit, mt),
                    "IVF_PQ": lambda: faiss.IndexIVFPQ(quantizer, dim, nlist, b.get("m", 0), 8, mt),
                    "SCANN": lambda: faiss.IndexIVFPQFastScan(quantizer, dim, nlist, dim // 2, 4, mt),
                }[family.index_type]()
                self.index = faiss.IndexRefineFlat(inner) if family.index_type == "SCANN" else inner
                self._parts.append(inner)
            case "IVF_RABITQ":
                inner = faiss.index_factory(dim, f"RR{dim},IVF{b['nlist']},RaBitQ", mt)
                store = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, mt)
                self._parts += [inner, store]
                self.index = faiss.IndexRefine(inner, store)
            case "HNSW_SQ":
                graph = faiss.IndexHNSWSQ(dim, faiss.ScalarQuantizer.QT_8bit, b["M"], mt)
                graph.hnsw.efConstruction = b["efConstruction"]
                self._parts.append(graph)
                self.index = faiss.IndexRefineFlat(graph)
            case "HNSW_PQ" | "HNSW_PRQ":
                if family.index_type == "HNSW_PQ":
                    graph = faiss.IndexHNSWPQ(dim, b["m"], b["M"], 8, mt)
                else:
                    storage = faiss.IndexProductResidualQuantizer(dim, b["m"], b["nrq"], b["nbits"], mt)
                    graph = faiss.IndexHNSW(storage, b["M"])
                    self._parts.append(storage)
                graph.hnsw.efConstruction = b["efConstruction"]
                self._parts.append(graph)
                self.index = faiss.IndexRefineFlat(graph)
            case _:
                raise ValueError(family.index_type)
        self.index.train(base)
        self.index.add(base)

    def searcher(self, k: int, setting: dict[str, Any], threads: int) -> Any:
        """A function of a query batch: its top ``k`` labels with the search parameters ``setting``."""
        params, keep = self._params(k, setting)

        def search(queries: np.ndarray) -> np.ndarray:
            faiss.omp_set_num_threads(threads)
            _, labels = self.index.search(queries, k, params=params)
            _ = keep  # the parameters point into it: held as long as this function
            return np.asarray(labels)

        return search

    def _params(self, k: int, setting: dict[str, Any]) -> tuple[Any, Any]:
        """faiss' parameters, and what they point to (kept alive by the caller)."""
        f = self.family
        value = setting[f.sweep]
        match f.index_type:
            case "IVF_FLAT" | "IVF_SQ8" | "IVF_PQ":
                return faiss.SearchParametersIVF(nprobe=value), None
            case "SCANN":
                ivf = faiss.SearchParametersIVF(nprobe=value)
                k_factor = max(1.0, setting["reorder_k"] / k)
                return faiss.IndexRefineSearchParameters(k_factor=k_factor, base_index_params=ivf), ivf
            case "IVF_RABITQ":
                rbq = faiss.IVFRaBitQSearchParameters(nprobe=value)
                rbq.qb = 0
                pre = faiss.SearchParametersPreTransform(index_params=rbq)
                params = faiss.IndexRefineSearchParameters(k_factor=setting["refine_k"], base_index_params=pre)
                return params, (rbq, pre)
            case _:
                hnsw = faiss.SearchParametersHNSW(efSearch=value)
                return faiss.IndexRefineSearchParameters(k_factor=setting["refine_k"], base_index_params=hnsw), hnsw
